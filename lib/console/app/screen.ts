import type { Spec } from "./spec.js";

/** One screen of the console, built once after sign-in and kept while the tab lives. */
export interface Screen {
  el: HTMLElement;
  /** Called each time the screen is shown, with the route's query (`#/knowledge?source=…`). */
  show(params: URLSearchParams): void;
}

export type ScreenFactory = (spec: Spec) => Screen;

/** Repeats `tick` every `ms` while `active()` holds, and while the page is visible. */
export function poller(tick: () => Promise<void>, active: () => boolean, ms = 1500) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = async () => {
    timer = undefined;
    if (document.visibilityState === "visible") await tick().catch(() => undefined);
    if (active()) timer = setTimeout(run, ms);
  };
  return {
    /** Starts polling unless it already runs. */
    kick() {
      if (timer === undefined && active()) timer = setTimeout(run, ms);
    },
  };
}
