import type { Change } from "./diff.js";
import type { JobPosting } from "./extract/jobs.js";
import type { Plan } from "./extract/pricing.js";
import type { Severity } from "./severity.js";

/** What a brief writer is told about one detected change. */
export interface BriefInput {
  /** Whose check it is: the writer grounds the brief in this workspace's brand profile. */
  workspaceId: string;
  competitor: { id: string; domain: string };
  change: Change;
  severity: Severity;
  title: string;
  /** The deterministic brief, for a writer to build on or fall back to. */
  summary: string;
}

/**
 * Writes an event's `aiBrief`, typically with a language model. Optional: detection never depends
 * on it, and when it fails or is slow the deterministic summary is used instead.
 */
export type BriefWriter = (input: BriefInput, options: { signal: AbortSignal }) => Promise<string>;

/** `$29 per seat per month`, `€290 per year`, `free`, `contact sales`. */
export function formatPrice(plan: Plan): string {
  if (plan.contactSales) return "contact sales";
  if (plan.price === null) return "no public price";
  if (plan.price === 0) return "free";
  const amount = plan.currency
    ? new Intl.NumberFormat("en-US", {
        style: "currency",
        currency: plan.currency,
        minimumFractionDigits: Number.isInteger(plan.price) ? 0 : 2,
      }).format(plan.price)
    : String(plan.price);
  const seat = plan.perSeat ? " per seat" : "";
  const period = plan.period === "once" ? " one-time" : plan.period ? ` per ${plan.period}` : "";
  return `${amount}${seat}${period}`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
const quote = (text: string | null) => `"${text ?? ""}"`;
const list = (items: string[], max = 3) =>
  items.length > max
    ? `${items.slice(0, max).join(", ")} and ${items.length - max} more`
    : items.join(", ");
const titles = (jobs: JobPosting[]) => list(jobs.map((job) => job.title));
const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** A short headline for the change, as shown in event lists. */
export function titleOf(change: Change): string {
  switch (change.kind) {
    case "plan_added":
      return `New plan: ${change.after.name} (${formatPrice(change.after)})`;
    case "plan_removed":
      return `Plan removed: ${change.before.name}`;
    case "price_increased":
    case "price_decreased":
    case "price_changed": {
      const verb = { price_increased: "rose", price_decreased: "fell", price_changed: "changed" };
      const { before, after } = change;
      return `${after.name} price ${verb[change.kind]} from ${formatPrice(before)} to ${formatPrice(after)}`;
    }
    case "now_contact_sales":
      return `${change.after.name} plan no longer shows a price (was ${formatPrice(change.before)})`;
    case "price_published":
      return `${change.after.name} plan now shows a price: ${formatPrice(change.after)}`;
    case "team_added":
      return `Hiring in a new team: ${change.subject} (${plural(change.after.length, "posting")})`;
    case "postings_added":
    case "postings_removed":
      return capitalized(change.subject);
    case "content_published":
      return `New post: ${change.subject}`;
    case "content_batch":
      return capitalized(change.subject);
    case "headline_changed":
      return "Homepage headline changed";
    case "claims_changed":
      return "Homepage claims changed";
  }
}

/** A plain-language account of the change with its before and after values: the default brief. */
export function summarize(change: Change, domain: string): string {
  const where = change.url ? ` (${change.url})` : "";
  switch (change.kind) {
    case "plan_added":
      return `${domain} added a ${change.after.name} plan at ${formatPrice(change.after)}${where}.`;
    case "plan_removed":
      return `${domain} no longer lists its ${change.before.name} plan, which was ${formatPrice(change.before)}${where}.`;
    case "price_increased":
    case "price_decreased": {
      const verb = change.kind === "price_increased" ? "raised" : "lowered";
      const sign = change.percent !== null && change.percent > 0 ? "+" : "";
      const by = change.percent === null ? "" : ` (${sign}${change.percent}%)`;
      return `${domain} ${verb} the price of its ${change.after.name} plan from ${formatPrice(change.before)} to ${formatPrice(change.after)}${by}${where}.`;
    }
    case "price_changed":
      return `${domain} changed how its ${change.after.name} plan is priced: ${formatPrice(change.before)} before, ${formatPrice(change.after)} now${where}.`;
    case "now_contact_sales":
      return `${domain} removed the public price of its ${change.after.name} plan (was ${formatPrice(change.before)}); buyers must now contact sales${where}.`;
    case "price_published":
      return `${domain} now publishes a price for its ${change.after.name} plan, ${formatPrice(change.after)}, where buyers had to contact sales before${where}.`;
    case "team_added":
      return `${domain} is hiring in a team it had no openings in before, ${change.subject}: ${titles(change.after)}${where}.`;
    case "postings_added":
      return `${domain} posted ${plural(change.after.length, "new role")}: ${titles(change.after)}${where}.`;
    case "postings_removed": {
      const closed = change.closedTeams.length
        ? ` No openings remain in ${list(change.closedTeams)}.`
        : "";
      return `${domain} closed ${plural(change.before.length, "role")}: ${titles(change.before)}.${closed}`;
    }
    case "content_published": {
      const { title, date, url } = change.after;
      return `${domain} published ${quote(title)}${date ? ` on ${date}` : ""}: ${url}.`;
    }
    case "content_batch":
      return `${domain} published ${change.after.length} new posts, among them ${list(change.after.map((i) => quote(i.title)))}.`;
    case "headline_changed":
      return `${domain} rewrote its homepage headline from ${quote(change.before)} to ${quote(change.after)}.`;
    case "claims_changed": {
      const parts = [
        change.after.length ? `now says ${list(change.after.map(quote))}` : "",
        change.before.length ? `no longer says ${list(change.before.map(quote))}` : "",
      ].filter(Boolean);
      return `${domain}'s homepage ${parts.join(" and ")}.`;
    }
  }
}
