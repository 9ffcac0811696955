/** A tiny DOM builder: the console's whole "framework". */

export type Child = Node | string | number | null | undefined | false | Child[];
type Props = Record<string, unknown>;

/** Properties set as properties rather than attributes (they track live state). */
const LIVE = new Set(["value", "checked", "disabled", "hidden", "selected", "indeterminate"]);

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else
      parent.appendChild(typeof child === "object" ? child : document.createTextNode(`${child}`));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value as EventListener);
    } else if (LIVE.has(key)) {
      (el as unknown as Record<string, unknown>)[key] = value;
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

/** Replaces an element's content. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

let ids = 0;
/** A document-unique id, to tie labels and hints to their controls. */
export const uid = (prefix: string) => `${prefix}-${++ids}`;

/** `valueProps` → "Value props", `seedUrl` → "Seed URL", `pagesIndexed` → "Pages indexed". */
export function humanize(key: string): string {
  const words = key
    .replace(/_/g, " ")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .replace(/\b(url|id|ai|kpi|gtm|icp|api)\b/g, (w) => w.toUpperCase());
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A labelled control: the label is tied to it, a hint to its description. */
export function field(
  label: string,
  control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
  hint?: string,
): HTMLElement {
  control.id ||= uid("f");
  const hintEl = hint ? h("small", { id: uid("hint"), class: "hint" }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  if (control instanceof HTMLInputElement && control.type === "checkbox") {
    return h(
      "div",
      { class: "field check" },
      control,
      h("label", { for: control.id }, label),
      hintEl,
    );
  }
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}

export function select(
  options: Array<[value: string, label: string]>,
  props: Props = {},
): HTMLSelectElement {
  return h(
    "select",
    props,
    options.map(([value, label]) => h("option", { value }, label)),
  );
}

export const when = (iso: string | null | undefined) =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }) : "—";

/** A link target for a source: its page when it is a web address, the console's entry otherwise. */
export function sourceHref(sourceId: string, urlOrPath: string | null | undefined): string {
  return urlOrPath && /^https?:\/\//i.test(urlOrPath)
    ? urlOrPath
    : `#/knowledge?source=${encodeURIComponent(sourceId)}`;
}

export function link(href: string, ...children: Child[]): HTMLAnchorElement {
  const external = /^https?:/i.test(href);
  return h(
    "a",
    external ? { href, target: "_blank", rel: "noopener noreferrer" } : { href },
    ...children,
  );
}
