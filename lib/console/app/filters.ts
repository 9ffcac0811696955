import { field, fill, h, humanize, select } from "./dom.js";
import type { Spec } from "./spec.js";

/**
 * Filters for a list, generated from its operation's query parameters: a list per enumeration, a
 * text box otherwise. A filter the API gains appears here by itself. A change by the user is a
 * `change` event of `el` (it bubbles from the control), for the list to reload on.
 */
export interface Filters {
  el: HTMLElement;
  value(): Record<string, string>;
  /** Refills the lists whose options come from `choices` (they change as data loads). */
  refresh(): void;
  /** Sets one filter (when the API has it); true when it did. */
  set(name: string, value: string): boolean;
}

export function filtersFor(
  spec: Spec,
  path: string,
  /** Options to offer instead of free text, by parameter name. */
  choices: Record<string, () => Array<[string, string]>> = {},
): Filters {
  const controls = new Map<string, HTMLInputElement | HTMLSelectElement>();
  const el = h("div", { class: "filters", role: "group", "aria-label": "Filters" });
  const optionsOf = (name: string, values: unknown[] = []): Array<[string, string]> =>
    // `enabled` takes "true"/"false"/"1"/"0": offer one spelling of each.
    (choices[name]?.() ?? values.map((v): [string, string] => [String(v), String(v)])).filter(
      ([v]) => v !== "1" && v !== "0",
    );
  for (const parameter of spec.filters("get", path)) {
    // A list filter (one value or several) is an array of its values: offer them one at a time.
    const schema = spec.resolve(parameter.schema);
    const values = schema.enum ?? spec.resolve(schema.items).enum;
    const control =
      values || choices[parameter.name]
        ? select([["", "Any"], ...optionsOf(parameter.name, values)])
        : h("input", { type: "search", placeholder: "Any" });
    control.name = parameter.name;
    controls.set(parameter.name, control);
    el.append(field(humanize(parameter.name), control));
  }
  return {
    el,
    value: () =>
      Object.fromEntries(
        [...controls].map(([name, c]) => [name, c.value.trim()]).filter(([, v]) => v),
      ),
    set(name, value) {
      const control = controls.get(name);
      if (control) control.value = value;
      return control !== undefined;
    },
    refresh() {
      for (const [name, control] of controls) {
        if (!choices[name] || !(control instanceof HTMLSelectElement)) continue;
        const chosen = control.value;
        fill(
          control,
          h("option", { value: "" }, "Any"),
          optionsOf(name).map(([v, label]) => h("option", { value: v }, label)),
        );
        control.value = chosen;
      }
    },
  };
}
