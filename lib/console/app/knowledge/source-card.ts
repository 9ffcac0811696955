import { api } from "../api.js";
import type { Source } from "../api-types.js";
import { field, h, humanize, link, select, when } from "../dom.js";
import type { Spec } from "../spec.js";
import { count, sourceState } from "../words.js";

/** Fields the card shows itself; any other field the API adds is listed in the card's details. */
const SHOWN = new Set([
  "id",
  "type",
  "name",
  "source_url_or_path",
  "status",
  "chunk_count",
  "enabled",
  "last_error",
  "error_code",
]);

/** What the API lets a source change besides `enabled`, from its PATCH operation's schema. */
export interface SourceSettings {
  canRename: boolean;
  /** Enumerated settings beyond enabled and name (refresh schedules, say), with their values. */
  extra: Array<readonly [name: string, values: string[]]>;
}

export function sourceSettings(spec: Spec): SourceSettings {
  const patch = spec.body("patch", "/api/knowledge/{id}");
  return {
    canRename: Boolean(patch.properties?.name),
    extra: Object.entries(patch.properties ?? {})
      .map(([name, s]) => [name, spec.resolve(s)] as const)
      .filter(([name, s]) => name !== "enabled" && name !== "name" && (s.enum?.length ?? 0) > 0)
      .map(([name, s]) => [name, (s.enum ?? []).filter((v) => v !== null).map(String)] as const),
  };
}

/** Runs a change to a source, says how it went, and lists the sources again. */
export type Act = (action: () => Promise<unknown>, done: string) => Promise<void>;

/** Renaming happens in place: the name becomes a text box (Enter saves, Escape cancels). */
function renameButton(source: Source, title: HTMLElement, act: Act): HTMLButtonElement {
  const rename = () => {
    const input = h("input", { type: "text", value: source.name, maxlength: 200 });
    const form = h(
      "form",
      { class: "rename" },
      field(`New name for ${source.name}`, input),
      h("button", { type: "submit" }, "Save name"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const name = input.value.trim();
      form.replaceWith(title);
      if (!name || name === source.name) return;
      title.textContent = name;
      void act(
        () => api("PATCH", `api/knowledge/${source.id}`, { body: { name } }),
        `Renamed to ${name}`,
      );
    });
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") form.replaceWith(title);
    });
    title.replaceWith(form);
    input.select();
  };
  return h("button", { type: "button", onclick: rename }, "Rename");
}

/** A list per enumerated setting; a refresh schedule applies to web pages only. */
function settingFields(source: Source, settings: SourceSettings, act: Act): HTMLElement[] {
  const current = source as Record<string, unknown>;
  return settings.extra
    .filter(([name]) => name !== "refresh" || source.type === "url")
    .map(([name, values]) => {
      const control = select([["", "—"], ...values.map((v): [string, string] => [v, v])]);
      control.value =
        current[name] === undefined || current[name] === null ? "" : String(current[name]);
      control.addEventListener("change", () =>
        act(
          () =>
            api("PATCH", `api/knowledge/${source.id}`, {
              body: { [name]: control.value === "" ? null : control.value },
            }),
          `${humanize(name)} saved`,
        ),
      );
      return field(humanize(name), control);
    });
}

/** The fields the card does not show itself, under "Details". */
function details(source: Source): HTMLElement | null {
  const extra = Object.entries(source).filter(
    // Internal ids mean nothing to a reader; they stay in the API.
    ([k, v]) =>
      !SHOWN.has(k) && !/(^id|_id|Id)$/.test(k) && v !== null && v !== undefined && v !== "",
  );
  if (extra.length === 0) return null;
  return h(
    "details",
    null,
    h("summary", null, "Details"),
    h(
      "dl",
      null,
      extra.map(([k, v]) => [
        h("dt", null, humanize(k)),
        h(
          "dd",
          null,
          /_at$|At$/.test(k)
            ? when(String(v))
            : typeof v === "boolean"
              ? v
                ? "Yes"
                : "No"
              : String(v),
        ),
      ]),
    ),
  );
}

/** One source: its state, where it comes from, why it failed, and what can be done with it. */
export function sourceCard(
  source: Source,
  highlighted: boolean,
  settings: SourceSettings,
  act: Act,
): HTMLElement {
  const toggle = h("input", { type: "checkbox", checked: Boolean(source.enabled) });
  toggle.addEventListener("change", () =>
    act(
      () => api("PATCH", `api/knowledge/${source.id}`, { body: { enabled: toggle.checked } }),
      `${source.name} ${toggle.checked ? "enabled" : "disabled"}`,
    ),
  );
  const title = h("strong", null, source.name);
  const place = source.source_url_or_path;
  return h(
    "li",
    {
      class: `card source${highlighted ? " highlight" : ""}`,
      id: `source-${source.id}`,
      "data-status": source.status,
    },
    h(
      "div",
      { class: "card-head" },
      title,
      h("span", { class: `badge ${source.status}` }, sourceState(source.status)),
      h(
        "span",
        { class: "muted" },
        `${humanize(source.type)} · ${count(source.chunk_count, "passage")}`,
      ),
    ),
    place ? h("p", { class: "place" }, /^https?:/i.test(place) ? link(place, place) : place) : null,
    source.status === "failed"
      ? h(
          "p",
          { class: "error-text" },
          `Could not be read: ${source.last_error ?? "the reason was not recorded"}. Check the address or file, then press Reindex.`,
        )
      : null,
    h(
      "div",
      { class: "actions" },
      field("Enabled", toggle),
      settingFields(source, settings, act),
      settings.canRename ? renameButton(source, title, act) : null,
      h(
        "button",
        {
          type: "button",
          onclick: () => act(() => api("POST", `api/knowledge/${source.id}/reindex`), "Reindexing"),
        },
        "Reindex",
      ),
      h(
        "button",
        {
          type: "button",
          class: "danger",
          onclick: () => {
            if (confirm(`Delete ${source.name} and everything read from it?`)) {
              void act(() => api("DELETE", `api/knowledge/${source.id}`), "Deleted");
            }
          },
        },
        "Delete",
      ),
    ),
    details(source),
  );
}
