import { changeHeadline } from "./brief.js";
import type { Change } from "./diff.js";
import type { Facts, Section } from "./snapshot.js";

export interface CheckSummaryInput {
  domain: string;
  /** The first successful check: nothing to compare with yet. */
  baseline: boolean;
  changes: Change[];
  facts?: Facts;
  /** Sections whose page failed this time and kept their last known state. */
  carried?: Section[];
  /** Sections seen for the first time after the baseline; they start their own baseline. */
  firstSeen?: Section[];
  /** The pricing page read with too few of the known plans to trust (changes.ts). */
  distrustedPricing?: boolean;
}

const PAGE: Record<Section, string> = {
  pricing: "pricing page",
  hiring: "careers page",
  content: "blog",
  messaging: "homepage",
};

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

function joined(parts: string[]): string {
  return parts.length > 1
    ? `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`
    : (parts[0] ?? "");
}

/** What a baseline holds: "3 plans, 4 job postings, 12 posts and the homepage's headline". */
function inventory(facts: Facts): string {
  return joined([
    ...(facts.pricing ? [plural(facts.pricing.plans.length, "plan")] : []),
    ...(facts.hiring ? [plural(facts.hiring.jobs.length, "job posting")] : []),
    ...(facts.content ? [plural(facts.content.items.length, "post")] : []),
    ...(facts.messaging?.headline ? ["the homepage's headline"] : []),
  ]);
}

/** The one-paragraph `summary` of a check's result. */
export function summarizeCheck(input: CheckSummaryInput): string {
  const { domain, facts = {}, carried = [], firstSeen = [] } = input;
  const notes: string[] = [];
  if (input.distrustedPricing) {
    notes.push(
      "The pricing page was read with half or more of the known plans missing, too little to trust: no pricing event was raised and the last trusted plans are kept.",
    );
  }
  const unread = input.distrustedPricing ? carried.filter((s) => s !== "pricing") : carried;
  if (unread.length > 0) {
    const pages = joined(unread.map((s) => PAGE[s]));
    notes.push(`The ${pages} could not be read this time; the last known state is kept.`);
  }
  if (firstSeen.length > 0) {
    notes.push(
      `Now also tracking the ${joined(firstSeen.map((s) => PAGE[s]))} (baseline recorded).`,
    );
  }
  let lead: string;
  if (input.baseline) {
    const missing = (["pricing", "hiring", "content"] as const).filter((s) => !facts[s]);
    if (missing.length > 0) notes.push(`No ${joined(missing.map((s) => PAGE[s]))} found.`);
    lead = `Baseline recorded for ${domain}: ${inventory(facts) || "the homepage"}. Later checks report changes against it.`;
  } else if (input.changes.length > 0) {
    const titles = input.changes.map(changeHeadline).join("; ");
    lead = `${plural(input.changes.length, "change")} on ${domain}: ${titles}.`;
  } else {
    lead = `No changes on ${domain} since the last check.`;
  }
  return [lead, ...notes].join(" ");
}
