import type { IntelEvent } from "../api-types.js";
import { h } from "../dom.js";

/**
 * A change in numbers and words: "Pro: $29 → $49 a month (+69%)", and its before and after side
 * by side with what differs marked (a highlight and the word "changed", readable without colour).
 */

type Change = IntelEvent["change"];
type Values = NonNullable<Change["before"]>;

/** 49, "USD", "month" → "$49 a month"; a plan with no price → "Contact sales" or "No price". */
export function price(
  amount: number | null | undefined,
  currency: string | null | undefined,
  period?: string | null,
  contactSales?: boolean,
): string {
  if (amount === null || amount === undefined) return contactSales ? "Contact sales" : "No price";
  const text = /^[A-Z]{3}$/.test(currency ?? "")
    ? amount.toLocaleString(undefined, {
        style: "currency",
        currency: currency ?? "USD",
        // Whole prices read "$49", not "$49.00".
        minimumFractionDigits: Number.isInteger(amount) ? 0 : 2,
      })
    : `${currency ?? ""}${amount.toLocaleString()}`;
  return period ? `${text} a ${period}` : text;
}

const priceOf = (v: Values | null) =>
  v ? price(v.amount, v.currency, v.period, v.contactSales) : "—";

/** One line saying what moved, with the numbers. */
export function changeInNumbers(change: Change): string {
  const { before, after, percentChange, subject } = change;
  if (before && "amount" in before && after && "amount" in after) {
    const pct =
      percentChange === null
        ? ""
        : ` (${percentChange > 0 ? "+" : ""}${Math.round(percentChange)}%)`;
    return `${subject}: ${priceOf(before)} → ${priceOf(after)}${pct}`;
  }
  const roles = (after?.roles?.length ?? 0) - (before?.roles?.length ?? 0);
  if (roles !== 0) return `${subject}: ${roles > 0 ? "+" : "−"}${Math.abs(roles)} open roles`;
  if (change.count > 1) return `${change.count} changes: ${(change.subjects ?? []).join(", ")}`;
  return subject;
}

const LABELS: Array<[keyof Values, string]> = [
  ["plan", "Plan"],
  ["amount", "Price"],
  ["period", "Billed per"],
  ["perSeat", "Per seat"],
  ["contactSales", "Contact sales"],
  ["roles", "Roles"],
  ["department", "Team"],
  ["location", "Location"],
  ["closedDepartments", "Teams no longer hiring"],
  ["title", "Title"],
  ["url", "Address"],
  ["date", "Date"],
  ["headline", "Headline"],
  ["claims", "Claims"],
];

function shown(values: Values | null, key: keyof Values): string {
  if (!values || !(key in values)) return "—";
  if (key === "amount") return priceOf(values);
  const value = values[key];
  if (Array.isArray(value)) return value.join(", ") || "—";
  if (typeof value === "boolean") return value ? "Yes" : "No";
  return value === null || value === undefined ? "—" : String(value);
}

/** Before and after, one row per field either side has; changed rows marked in words too. */
export function beforeAfter(change: Change): HTMLTableElement {
  const rows = LABELS.filter(
    ([key]) => (change.before && key in change.before) || (change.after && key in change.after),
  );
  return h(
    "table",
    { class: "before-after" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        h("th", { scope: "col" }, "What"),
        h("th", { scope: "col" }, "Before"),
        h("th", { scope: "col" }, "After"),
      ),
    ),
    h(
      "tbody",
      null,
      rows.map(([key, label]) => {
        const was = shown(change.before, key);
        const is = shown(change.after, key);
        const changed = was !== is;
        return h(
          "tr",
          { class: changed ? "changed" : null },
          h(
            "th",
            { scope: "row" },
            label,
            changed ? h("span", { class: "flag" }, " (changed)") : null,
          ),
          h("td", null, changed ? h("del", null, was) : was),
          h("td", null, changed ? h("mark", null, is) : is),
        );
      }),
    ),
  );
}
