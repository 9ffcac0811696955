import { ApiError } from "./api.js";
import { fill, h, humanize } from "./dom.js";
import { explain } from "./words.js";

/** `body.valueProps.0` → "Value props": the field a reader filled in, not its path in JSON. */
const fieldName = (path: string) =>
  humanize(
    path
      .split(".")
      .filter((part) => !/^(\d+|body|query|params)$/.test(part))
      .pop() ?? path,
  );

/**
 * Where a panel says how things went: an alert for errors (what happened and what to do in words,
 * a link to the screen that fixes it, the fields the API named, and its code for support) and a
 * polite status line for progress.
 */
export class Feedback {
  readonly el = h("div", { class: "feedback" });
  private readonly alert = h("div", { role: "alert", class: "error", hidden: true });
  private readonly status = h("p", { role: "status", class: "status" });

  constructor() {
    this.el.append(this.alert, this.status);
  }

  error(err: unknown): void {
    const error =
      err instanceof ApiError
        ? err
        : new ApiError(0, "client_error", err instanceof Error ? err.message : String(err));
    const { what, fix } = explain(error.code, error.message);
    fill(
      this.alert,
      h("p", null, what),
      error.issues.length > 0
        ? h(
            "ul",
            null,
            error.issues.map((issue) =>
              h(
                "li",
                null,
                issue.path ? `${fieldName(issue.path)}: ${issue.message}` : issue.message,
              ),
            ),
          )
        : null,
      fix ? h("a", { class: "button", href: fix.href }, fix.label) : null,
      // What support needs, out of the way of what the reader needs.
      h(
        "details",
        { class: "technical" },
        h("summary", null, "Details for support"),
        `${error.code}${error.status ? ` (HTTP ${error.status})` : ""}: ${error.message}`,
      ),
    );
    this.alert.hidden = false;
    this.status.textContent = "";
  }

  say(message: string): void {
    this.clear();
    this.status.textContent = message;
  }

  clear(): void {
    this.alert.hidden = true;
    this.alert.replaceChildren();
    this.status.textContent = "";
  }

  /** Runs an action, showing its error if it fails; resolves to its result or undefined. */
  async run<T>(action: () => Promise<T>, done?: string): Promise<T | undefined> {
    this.clear();
    let failed = false;
    const result = await action().catch((err: unknown) => {
      failed = true;
      this.error(err);
      return undefined;
    });
    if (!failed && done) this.say(done);
    return result;
  }

  /** Like `run`, but leaves what is shown alone unless the action fails (background refreshes). */
  async attempt<T>(action: () => Promise<T>): Promise<T | undefined> {
    try {
      return await action();
    } catch (err) {
      this.error(err);
      return undefined;
    }
  }
}

/** A button that is disabled while its action runs (no double submits). */
export function busy<T>(button: HTMLButtonElement, action: () => Promise<T>): Promise<T> {
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  return action().finally(() => {
    button.disabled = false;
    button.removeAttribute("aria-busy");
  });
}
