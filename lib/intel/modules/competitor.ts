import { z } from "@hono/zod-openapi";
import { normalizeDomain } from "../../competitors/domain.js";
import { documentInputs, objections, phrase, phrases, text } from "./fields.js";
import { defineModule, queryOf } from "./module.js";

const input = z
  .strictObject({
    ...documentInputs,
    domain: text(2048, "The competitor's domain or URL; a tracked competitor with it adds its data")
      .optional()
      .openapi({ example: "rival.com" }),
    competitorId: text(64, "A tracked competitor (`comp_...`) instead of a domain").optional(),
    company: text(200, "The competitor's name, with or instead of its domain").optional(),
    segment: text(300, "The segment to compare in, when not the whole market").optional(),
  })
  .refine((i) => Boolean(i.domain ?? i.competitorId ?? i.company), {
    message: "Give the competitor: `domain`, `competitorId` or `company`",
    path: ["domain"],
  })
  .openapi("CompetitorInput");

const output = z
  .object({
    competitor: phrase("The competitor's name or domain", 150),
    positioning: phrase("How they position themselves, in one or two sentences", 600),
    targetSegments: phrases("Who they sell to", 6),
    products: z
      .array(z.object({ name: phrase("Product or plan", 120), summary: phrase("What it does") }))
      .max(8)
      .describe("Their main products"),
    pricing: phrase("Pricing model, plans and prices as known; say when unknown", 800),
    strengths: phrases("Where they are stronger than the brand"),
    weaknesses: phrases("Where the brand is stronger"),
    recentChanges: z
      .array(
        z.object({
          date: phrase("YYYY-MM-DD when known", 10).optional(),
          change: phrase("What changed"),
          implication: phrase("What it means for the brand"),
        }),
      )
      .max(10)
      .describe("From the tracked change events first, newest first; empty when none are known"),
    howToWin: phrases("Plays that win deals against them", 6),
    battlecard: z.object({
      talkingPoints: z
        .array(z.object({ point: phrase("What to say"), proof: phrase("Why it is true") }))
        .min(1)
        .max(6),
      landmines: phrases("Questions for prospects that expose their weaknesses", 5),
      objections: objections("Objections prospects raise in their favour, and the answers"),
    }),
  })
  .openapi("CompetitorOutput");

/** `www.rival-labs.com` -> "rival labs rival-labs.com": how passages name a company, and its site. */
export function brandWords(input: string | undefined): string | undefined {
  if (!input) return undefined;
  const { domain } = normalizeDomain(input);
  return `${domain.split(".")[0]?.replaceAll("-", " ")} ${domain}`;
}

/** A competitor analysis and battlecard, enriched by tracking data when the competitor is tracked. */
export const competitor = defineModule({
  name: "competitor",
  summary: "A competitor analysis and battlecard",
  input,
  output,
  query: (i, tracked) =>
    queryOf(
      brandWords(tracked?.domain ?? i.domain),
      i.company,
      i.segment,
      i.notes,
      "competitor alternative comparison pricing",
    ),
  title: (i, o) => `Competitor: ${o.competitor || i.company || i.domain || i.competitorId}`,
  instructions: [
    "Analyse the competitor in the request against the brand, as a product marketer preparing a sales battlecard.",
    "Use the tracked competitor data and its recent changes when given; list those changes in recentChanges, newest first.",
    "Strengths and weaknesses are relative to the brand's own products and differentiators.",
  ],
  maxTokens: 1800,
  competitor: (i) => ({ competitorId: i.competitorId, domain: i.domain }),
});
