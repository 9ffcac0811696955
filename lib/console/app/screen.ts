import type { Spec } from "./spec.js";

/** One screen of the console, built once after sign-in and kept while the tab lives. */
export interface Screen {
  el: HTMLElement;
  /** Called each time the screen is shown, with the route's query (`#/knowledge?source=…`). */
  show(params: URLSearchParams): void;
}

export type ScreenFactory = (spec: Spec) => Screen;
