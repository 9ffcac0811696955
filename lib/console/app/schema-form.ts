import { field, h, humanize, select, uid } from "./dom.js";
import type { Schema, Spec } from "./spec.js";
import { plain } from "./words.js";

/**
 * A form generated from a JSON schema of /openapi.json: a text box per string (a text area when
 * it may be long, suggestions from its examples), a list per enumeration, checkboxes for a list of
 * enumerated values, one line per item for other lists of strings, a checkbox per boolean;
 * required fields are marked and descriptions become hints.
 */
export interface SchemaForm {
  el: HTMLElement;
  /** The filled fields; empty ones are left out. */
  value(): Record<string, unknown>;
  set(values: Record<string, unknown>): void;
}

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

interface Entry {
  control: Control;
  /** Shown after the field (a text box's suggestions). */
  extra?: HTMLElement | null;
  read(): unknown;
  write(value: unknown): void;
}

/** A field made of several controls (a choice of many), labelled by its legend. */
interface Group {
  el: HTMLElement;
  read(): unknown;
  write(value: unknown): void;
}

const typeOf = (schema: Schema) =>
  (Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type) ?? "";

/** A list whose items come from an enumeration: one checkbox per value. */
function checkboxes(spec: Spec, schema: Schema, legend: string, hint?: string): Group | undefined {
  const values = spec.resolve(schema.items).enum;
  if (typeOf(schema) !== "array" || !values?.length) return undefined;
  const boxes = values.map((value) => {
    const box = h("input", { type: "checkbox", value: String(value) });
    return { value, box, el: field(String(value), box) };
  });
  return {
    el: h(
      "fieldset",
      null,
      h("legend", null, legend),
      boxes.map((b) => b.el),
      hint ? h("small", { class: "hint" }, hint) : null,
    ),
    read: () => {
      const chosen = boxes.filter((b) => b.box.checked).map((b) => b.value);
      return chosen.length > 0 ? chosen : undefined;
    },
    write: (v) => {
      for (const b of boxes) b.box.checked = Array.isArray(v) && v.includes(b.value);
    },
  };
}

function entryFor(spec: Spec, schema: Schema, name: string): Entry {
  // A null among the values is "none", which the empty choice already says.
  const options = (schema.enum ?? schema.anyOf?.flatMap((s) => spec.resolve(s).enum ?? []))?.filter(
    (o) => o !== null,
  );
  if (options && options.length > 0) {
    const control = select([
      ["", "—"],
      ...options.map((o): [string, string] => [String(o), humanize(String(o))]),
    ]);
    return {
      control,
      read: () => {
        const chosen = options.find((o) => String(o) === control.value);
        return control.value === "" ? undefined : chosen;
      },
      write: (v) => {
        control.value = v === undefined || v === null ? "" : String(v);
      },
    };
  }
  const type = typeOf(schema);
  if (type === "boolean") {
    const control = h("input", { type: "checkbox", checked: schema.default === true });
    return {
      control,
      read: () => control.checked,
      write: (v) => {
        control.checked = v === true;
      },
    };
  }
  if (type === "integer" || type === "number") {
    const control = h("input", {
      type: "number",
      min: schema.minimum,
      max: schema.maximum,
      step: type === "integer" ? 1 : "any",
      placeholder: schema.default,
    });
    return {
      control,
      read: () => (control.value === "" ? undefined : Number(control.value)),
      write: (v) => {
        control.value = v === undefined || v === null ? "" : String(v);
      },
    };
  }
  if (type === "array" && typeOf(spec.resolve(schema.items)) === "string") {
    const control = h("textarea", { rows: 3 });
    return {
      control,
      read: () => {
        const lines = control.value
          .split("\n")
          .map((line) => line.trim())
          .filter(Boolean);
        return lines.length > 0 ? lines : undefined;
      },
      write: (v) => {
        control.value = Array.isArray(v) ? v.join("\n") : "";
      },
    };
  }
  if (type === "string") {
    const isUrl = /url$/i.test(name);
    const long = (schema.maxLength ?? 0) > 300 && !isUrl;
    const suggestions = (schema.examples ?? []).map(String);
    const example = typeof schema.example === "string" ? schema.example : suggestions[0];
    const control = long
      ? h("textarea", { rows: 3, maxlength: schema.maxLength, placeholder: example })
      : h("input", {
          type: isUrl || schema.format === "uri" ? "url" : "text",
          maxlength: schema.maxLength,
          placeholder: example,
        });
    // Suggested values (the API's `examples`) offered as the user types, any text allowed.
    const list = !long && suggestions.length > 0 ? h("datalist", { id: uid("suggest") }) : null;
    if (list) {
      list.append(...suggestions.map((value) => h("option", { value })));
      control.setAttribute("list", list.id);
    }
    return {
      control,
      extra: list,
      read: () => control.value.trim() || undefined,
      write: (v) => {
        control.value = typeof v === "string" ? v : "";
      },
    };
  }
  // Anything else (nested objects): JSON, as the API takes it.
  const control = h("textarea", { rows: 3, placeholder: "JSON" });
  return {
    control,
    read: () => (control.value.trim() ? JSON.parse(control.value) : undefined),
    write: (v) => {
      control.value = v === undefined ? "" : JSON.stringify(v, null, 2);
    },
  };
}

export interface FormOptions {
  /** Optional fields go under a "More options" disclosure, so the form starts short. */
  collapseOptional?: boolean;
  /** Hints in the reader's words for fields whose API description speaks to developers. */
  hints?: Record<string, string>;
}

export function schemaForm(spec: Spec, schema: Schema, options: FormOptions = {}): SchemaForm {
  const resolved = spec.resolve(schema);
  const required = new Set(resolved.required ?? []);
  const entries = new Map<string, Pick<Entry, "read" | "write">>();
  const el = h("div", { class: "schema-form" });
  const more = options.collapseOptional
    ? h("details", null, h("summary", null, "More options"))
    : el;
  const home = (name: string) => (required.has(name) ? el : more);
  for (const [name, raw] of Object.entries(resolved.properties ?? {})) {
    const property = spec.resolve(raw);
    const label = `${humanize(name)}${required.has(name) ? " (required)" : ""}`;
    const description = options.hints?.[name] ?? plain(property.description);
    const group = checkboxes(spec, property, label, description);
    if (group) {
      home(name).append(group.el);
      entries.set(name, group);
      continue;
    }
    const entry = entryFor(spec, property, name);
    entry.control.name = name;
    if (required.has(name)) {
      entry.control.required = true;
      entry.control.setAttribute("aria-required", "true");
    }
    const isList = typeOf(property) === "array";
    const hint = [description, isList ? "One per line." : ""].filter(Boolean).join(" ");
    home(name).append(field(label, entry.control, hint));
    if (entry.extra) home(name).append(entry.extra);
    entries.set(name, entry);
  }
  if (more !== el && more.childElementCount > 1) el.append(more);
  return {
    el,
    value: () => {
      const out: Record<string, unknown> = {};
      for (const [name, entry] of entries) {
        const value = entry.read();
        // An unticked optional checkbox says nothing; the API's default applies.
        if (value !== undefined && !(value === false && !required.has(name))) out[name] = value;
      }
      return out;
    },
    set: (values) => {
      for (const [name, entry] of entries) entry.write(values[name]);
    },
  };
}
