import type { BrandProfile, CompetitorState, IntelEvent } from "../console/app/api-types.js";
import { changeInNumbers, price } from "../console/app/competitors/change.js";
import { kindWord, severityWord } from "../console/app/words.js";

/**
 * A battlecard sales can open in a call, as Markdown: who they are, their plans beside ours, what
 * changed lately, and what we say about it. Written here only, for
 * `GET /api/intel/competitors/{id}/battlecard`, whose answer the console downloads. Changes and
 * plans read in the console's own words (`words.ts`, `change.ts`: modules that touch no browser
 * global when loaded), so a change reads the same on screen and on the card.
 */
export function battlecard(
  competitor: CompetitorState,
  events: IntelEvent[],
  brand: BrandProfile | undefined,
): string {
  const name = competitor.companyName ?? competitor.domain;
  const snap = competitor.snapshot;
  const lines = [
    `# Battlecard: ${name}`,
    "",
    `Site: ${competitor.homepage ?? `https://${competitor.domain}/`}`,
  ];
  if (snap?.headline) lines.push("", `> ${snap.headline}`);
  if (snap?.claims.length)
    lines.push("", "## What they claim", "", ...snap.claims.map((c) => `- ${c}`));
  lines.push("", "## Their plans", "");
  if (snap?.plans.length) {
    lines.push("| Plan | Price |", "| --- | --- |");
    for (const p of snap.plans)
      lines.push(
        `| ${p.name} | ${p.priceText || price(p.price, p.currency, p.period, p.contactSales)} |`,
      );
  } else lines.push("No plans seen yet.");
  if (brand) {
    lines.push("", `## ${brand.name}: how we compare`, "");
    for (const v of [...(brand.differentiators ?? []), ...(brand.valueProps ?? [])])
      lines.push(`- ${v}`);
    if (brand.products?.length) lines.push("", `Our plans: ${brand.products.join("; ")}`);
  }
  if (snap)
    lines.push(
      "",
      "## Hiring and content",
      "",
      `- ${snap.openRoles.count} open roles`,
      `- ${snap.posts.count} posts; latest: ${snap.posts.latest[0]?.title ?? "none"}`,
    );
  lines.push("", "## What changed lately", "");
  for (const e of events.slice(0, 10))
    lines.push(
      `- ${e.detectedAt.slice(0, 10)} · ${severityWord(e.severity)} · ${kindWord(e.change.kind)}: ${changeInNumbers(e.change)}. ${e.aiBrief}`,
    );
  if (events.length === 0) lines.push("Nothing yet.");
  return `${lines.join("\n")}\n`;
}
