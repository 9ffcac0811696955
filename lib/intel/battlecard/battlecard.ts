import type { z } from "@hono/zod-openapi";
import type { BrandProfile, CompetitorState, IntelEvent } from "../../console/app/api-types.js";
import { changeInNumbers, price } from "../../console/app/competitors/change.js";
import { kindWord, severityWord } from "../../console/app/words.js";
import { toMarkdown } from "../artifacts/markdown.js";
import type { competitor as competitorModule } from "../modules/competitor.js";

/** The competitor module's answer, as a saved artifact holds it. */
export type CompetitorAnalysis = z.output<(typeof competitorModule)["output"]>;

/** What a battlecard is written from; each part may be missing, and the card says so. */
export interface BattlecardInput {
  competitor: CompetitorState;
  /** Newest first. */
  events: IntelEvent[];
  brand: BrandProfile | undefined;
  /** The latest saved competitor analysis of this competitor, if one was saved. */
  analysis: { title: string; createdAt: string; output: CompetitorAnalysis } | undefined;
  /** Passages of the knowledge base's enabled sources that name the competitor, best first. */
  passages: Array<{ text: string; source: string; url: string | null }>;
  /** False when the knowledge base was not searched in time (or failed): the card says so. */
  searched: boolean;
}

/** A passage quoted on a card, at most this long: a card is read in a call, not studied. */
const PASSAGE_CHARS = 400;

const oneLine = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat;
};

/**
 * A battlecard sales can open in a call, as Markdown: who they are, their plans beside ours, what
 * the saved competitor analysis says, what the knowledge base says about them, what changed
 * lately. Written here only, for `GET /api/intel/competitors/{id}/battlecard`, whose answer the
 * console downloads. Changes and plans read in the console's own words (`words.ts`, `change.ts`:
 * modules that touch no browser global when loaded), the analysis as an artifact's export writes
 * it (`toMarkdown`), so a change or a section reads the same on screen, on the card and in the
 * artifact's file.
 */
export function battlecard({
  competitor,
  events,
  brand,
  analysis,
  passages,
  searched,
}: BattlecardInput): string {
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
  if (analysis) {
    const { positioning, strengths, weaknesses, howToWin, battlecard: plays } = analysis.output;
    lines.push(
      "",
      "## What our analysis says",
      "",
      `From “${analysis.title}”, saved ${analysis.createdAt.slice(0, 10)}.`,
      "",
      toMarkdown({ positioning, strengths, weaknesses, howToWin, ...plays }, 3).trimEnd(),
    );
  }
  lines.push("", "## What our knowledge base says", "");
  for (const p of passages)
    lines.push(
      `> ${oneLine(p.text, PASSAGE_CHARS)}`,
      "",
      `Source: ${p.url ? `${p.source} (${p.url})` : p.source}`,
      "",
    );
  if (passages.length === 0)
    lines.push(
      searched
        ? "No enabled source names them yet."
        : "The knowledge base did not answer in time; download the card again to include it.",
    );
  else lines.pop();
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
