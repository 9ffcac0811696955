/**
 * The API's spellings in a marketer's words: states, kinds of change, severities and error codes.
 * One table each, so a screen never shows `awaiting_upload` or `price_increase` as they are in JSON.
 */

const SOURCE_STATES: Record<string, string> = {
  awaiting_upload: "Waiting for the file",
  indexing: "Being read",
  indexed: "Ready",
  failed: "Failed",
};

const KINDS: Record<string, string> = {
  price_increase: "Price rise",
  price_decrease: "Price cut",
  plan_added: "New plan",
  plan_removed: "Plan removed",
  moved_to_contact_sales: "Now “contact sales”",
  price_published: "Price now shown",
  free_tier_added: "New free plan",
  free_tier_removed: "Free plan removed",
  billing_period_changed: "Billing period changed",
  price_changed: "Pricing basis changed",
  roles_added: "New job openings",
  roles_removed: "Jobs closed",
  new_department: "Hiring in a new team",
  new_location: "Hiring in a new place",
  post_published: "New blog post",
  page_added: "New page",
  page_removed: "Page removed",
  messaging_changed: "Homepage message changed",
};

const SECTIONS: Record<string, string> = {
  pricing: "Pricing",
  hiring: "Hiring",
  content: "Content",
  messaging: "Messaging",
};

/** A word from one of the tables, or the spelling made readable (`some_value` → "Some value"). */
function lookup(table: Record<string, string>, value: string): string {
  const known = table[value];
  if (known) return known;
  const words = value.replace(/[_-]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export const sourceState = (status: string) => lookup(SOURCE_STATES, status);
export const kindWord = (kind: string) => lookup(KINDS, kind);
export const sectionWord = (type: string) => lookup(SECTIONS, type);
export const severityWord = (severity: string) => lookup({}, severity);

/** "1 passage", "3 passages": counts agree with their noun. */
export const count = (n: number, one: string, many = `${one}s`) =>
  `${n.toLocaleString()} ${n === 1 ? one : many}`;

/** An API description as a hint: Markdown code marks dropped. */
export const plain = (text: string | undefined) => text?.replace(/`([^`]*)`/g, "$1");

/** What went wrong in words, what to do, and the screen that fixes it. */
export interface Explained {
  what: string;
  fix?: { label: string; href: string };
}

const ERRORS: Record<string, Explained> = {
  brand_profile_missing: {
    what: "Your brand profile is not set up yet, and this needs it to compare you with others.",
    fix: { label: "Set up your brand profile", href: "#/settings" },
  },
  quota_exceeded: {
    what: "Today's allowance for this is used up. It resets tomorrow (UTC).",
    fix: { label: "See today's usage", href: "#/settings" },
  },
  rate_limited: { what: "Too many requests at once. Wait a moment and try again." },
  unauthorized: {
    what: "This key was not accepted. Check it was copied whole, or ask for a new one.",
  },
  network_error: { what: "The service could not be reached. Check your connection and retry." },
  not_found: { what: "This is no longer there: it may have been removed. Refresh the list." },
  conflict: { what: "This is busy or already done. Wait a moment, then refresh." },
  limit_reached: { what: "The workspace holds as many of these as it may. Remove one first." },
};

/** An error code and the API's message, explained; the message itself when it is all we have. */
export function explain(code: string, message: string): Explained {
  return ERRORS[code] ?? { what: message || "Something went wrong. Try again." };
}
