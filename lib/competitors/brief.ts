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

const signed = (percent: number) => `${percent > 0 ? "+" : ""}${percent}%`;
const jobsIn = (jobs: JobPosting[]) => plural(jobs.length, "role");

/**
 * A short headline for the change, as shown in event lists: the company's name first, and for a
 * price move its percentage, so a list reads without opening an event.
 */
export function titleOf(change: Change, name: string): string {
  return `${name}: ${changeHeadline(change)}`;
}

/** The change alone, without whose it is: what a check's summary lists. */
export function changeHeadline(change: Change): string {
  switch (change.kind) {
    case "plan_added":
      return `new plan ${change.after?.name} (${change.after ? formatPrice(change.after) : ""})`;
    case "plan_removed":
      return `${change.before?.name} plan removed`;
    case "free_tier_added":
      return `free plan ${change.subject} added`;
    case "free_tier_removed":
      return change.after
        ? `free plan ${change.subject} now costs ${formatPrice(change.after)}`
        : `free plan ${change.subject} removed`;
    case "price_increase":
    case "price_decrease":
    case "price_changed":
    case "billing_period_changed": {
      const verb = {
        price_increase: "rose",
        price_decrease: "fell",
        price_changed: "changed",
        billing_period_changed: "changed billing",
      }[change.kind];
      // "rose 69%", "fell 20%": the verb carries the sign.
      const by = change.percent === null ? "" : ` ${Math.abs(change.percent)}%`;
      const { before, after } = change;
      const values = before && after ? ` from ${formatPrice(before)} to ${formatPrice(after)}` : "";
      return `${change.subject} price ${verb}${by}${values}`;
    }
    case "moved_to_contact_sales":
      return `${change.subject} plan no longer shows a price (was ${change.before ? formatPrice(change.before) : ""})`;
    case "price_published":
      return `${change.subject} plan now shows a price: ${change.after ? formatPrice(change.after) : ""}`;
    case "new_department":
      return `hiring in a new team, ${change.subject} (${jobsIn(change.after)})`;
    case "new_location":
      return `hiring in a new location, ${change.subject} (${jobsIn(change.after)})`;
    case "roles_added":
    case "roles_removed":
      return change.subject;
    case "post_published":
      return `new post "${change.subject}"`;
    case "page_added":
      return `new page ${new URL(change.after.url).pathname}`;
    case "page_removed":
      return `page removed ${new URL(change.before.url).pathname}`;
    case "messaging_changed":
      return change.headlineChanged ? "homepage headline changed" : "homepage claims changed";
  }
}

/** A plain-language account of the change with its before and after values: the default brief. */
export function summarize(change: Change, name: string): string {
  const where = change.url ? ` (${change.url})` : "";
  switch (change.kind) {
    case "plan_added":
    case "free_tier_added":
      return change.before && change.after
        ? `${name} made its ${change.subject} plan free (was ${formatPrice(change.before)})${where}.`
        : `${name} added a ${change.subject} plan at ${change.after ? formatPrice(change.after) : "no public price"}${where}.`;
    case "plan_removed":
      return `${name} no longer lists its ${change.subject} plan, which was ${change.before ? formatPrice(change.before) : "unknown"}${where}.`;
    case "free_tier_removed":
      return change.after
        ? `${name} now charges for its free ${change.subject} plan: ${formatPrice(change.after)}${where}.`
        : `${name} no longer offers its free ${change.subject} plan${where}.`;
    case "price_increase":
    case "price_decrease": {
      const verb = change.kind === "price_increase" ? "raised" : "lowered";
      const by = change.percent === null ? "" : ` (${signed(change.percent)})`;
      const [before, after] = [change.before, change.after].map((p) => (p ? formatPrice(p) : ""));
      return `${name} ${verb} the price of its ${change.subject} plan from ${before} to ${after}${by}${where}.`;
    }
    case "price_changed":
    case "billing_period_changed": {
      const [before, after] = [change.before, change.after].map((p) => (p ? formatPrice(p) : ""));
      return `${name} changed how its ${change.subject} plan is priced: ${before} before, ${after} now${where}.`;
    }
    case "moved_to_contact_sales":
      return `${name} removed the public price of its ${change.subject} plan (was ${change.before ? formatPrice(change.before) : ""}); buyers must now contact sales${where}.`;
    case "price_published":
      return `${name} now publishes a price for its ${change.subject} plan, ${change.after ? formatPrice(change.after) : ""}, where buyers had to contact sales before${where}.`;
    case "new_department":
      return `${name} is hiring in a team it had no openings in before, ${change.subject}: ${titles(change.after)}${where}.`;
    case "new_location":
      return `${name} is hiring in a location it had no openings in before, ${change.subject}: ${titles(change.after)}${where}.`;
    case "roles_added":
      return `${name} posted ${plural(change.after.length, "new role")}: ${titles(change.after)}${where}.`;
    case "roles_removed": {
      const closed = change.closedTeams.length
        ? ` No openings remain in ${list(change.closedTeams)}.`
        : "";
      return `${name} closed ${plural(change.before.length, "role")}: ${titles(change.before)}.${closed}`;
    }
    case "post_published": {
      const { title, date, url } = change.after;
      return `${name} published ${quote(title)}${date ? ` on ${date}` : ""}: ${url}.`;
    }
    case "page_added":
      return `${name} published a new page: ${change.after.url}.`;
    case "page_removed":
      return `${name} removed a page: ${change.before.url}.`;
    case "messaging_changed": {
      const { before, after } = change;
      const parts = [
        change.headlineChanged
          ? `rewrote its homepage headline from ${quote(before.headline)} to ${quote(after.headline)}`
          : "",
        after.claims.length ? `now says ${list(after.claims.map(quote))}` : "",
        before.claims.length ? `no longer says ${list(before.claims.map(quote))}` : "",
      ].filter(Boolean);
      return `${name} ${joinedParts(parts)} on its homepage.`;
    }
  }
}

const joinedParts = (parts: string[]) =>
  parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}` : (parts[0] ?? "");

/** A rating in prose: "critical severity", "rated high", "priority: low". Bounded spans only. */
const RATING =
  /\b(critical|high|medium|low)[- ](?:severity|priority|risk|urgency)\b|\b(?:severity|priority|rated|rating|rate it|rate this)\b[^.\n]{0,24}?\b(critical|high|medium|low)\b/gi;
/** Words of an instruction aimed at the model, which page text may carry and a brief never should. */
const INSTRUCTION =
  /\b(?:ignore|disregard|forget)\b[^.\n]{0,40}?\b(?:instructions?|prompts?|rules)\b|\bsystem prompt\b|\byour (?:prompt|instructions)\b/i;

/**
 * Whether a written brief was steered by the page it describes: it states a severity other than
 * the one the rules gave, or repeats instructions aimed at the model. Such a brief is dropped for
 * the deterministic one; severity and kind never come from the model in the first place.
 */
export function steeredBrief(text: string, severity: Severity): boolean {
  if (INSTRUCTION.test(text)) return true;
  for (const match of text.matchAll(RATING)) {
    const level = (match[1] ?? match[2] ?? "").toLowerCase();
    if (level && level !== severity) return true;
  }
  return false;
}
