import { z } from "@hono/zod-openapi";
import { buyingRole, documentInputs, phrase, phrases, priority, text } from "./fields.js";
import { brandValue, defineModule, queryOf } from "./module.js";

const input = z
  .strictObject({
    ...documentInputs,
    product: text(
      300,
      "The product, feature or offer to take to market (the brand profile's first product, or the brand, when left out)",
    )
      .optional()
      .openapi({ example: "Acme Insights, our new AI reporting add-on" }),
    segment: text(300, "The target market, when already chosen").optional(),
    region: text(100, "Launch market or region").optional(),
    timeline: text(100, "Launch date or time frame").optional().openapi({ example: "Q3 2025" }),
  })
  .openapi("GtmInput");

const output = z
  .object({
    summary: phrase("The strategy in two or three sentences", 800),
    icp: z
      .object({
        description: phrase("The ideal customer profile", 600),
        firmographics: phrases("Industry, size, region, tech and other fit criteria"),
        signals: phrases("Buying signals that an account is in market", 6),
        disqualifiers: phrases("Who not to target", 5),
      })
      .describe("Ideal customer profile"),
    personas: z
      .array(
        z.object({
          role: phrase("Job title", 120),
          buyingRole,
          priorities: phrase("What they care about in this purchase"),
        }),
      )
      .min(1)
      .max(5)
      .describe("The buying committee"),
    positioningStatement: phrase(
      "For [target] who [need], [product] is a [category] that [benefit]. Unlike [alternative], it [differentiator].",
      600,
    ),
    valuePillars: z
      .array(
        z.object({
          pillar: phrase("Name of the pillar", 80),
          description: phrase("The value it delivers"),
          proof: phrases("Evidence: features, customers, numbers", 4),
        }),
      )
      .min(1)
      .max(5),
    pricingAndPackaging: phrases("Notes on pricing, packaging and offers", 6),
    channels: z
      .array(
        z.object({
          channel: phrase("Channel", 100),
          priority,
          rationale: phrase("Why it fits this audience"),
          tactics: phrases("First tactics to run", 4),
        }),
      )
      .min(1)
      .max(8),
    launchPhases: z
      .array(
        z.object({
          phase: phrase("Name, e.g. beta, launch, scale", 80),
          timing: phrase("When and how long", 100),
          objectives: phrases("What the phase must achieve", 4),
          activities: phrases("Key activities", 6),
          successCriteria: phrases("Measurable criteria to move to the next phase", 4),
        }),
      )
      .min(1)
      .max(5),
    risks: z
      .array(
        z.object({ risk: phrase("What could go wrong"), mitigation: phrase("How to reduce it") }),
      )
      .min(1)
      .max(6),
  })
  .openapi("GtmOutput");

/** A go-to-market plan for a product or offer. */
export const gtm = defineModule({
  name: "gtm",
  summary: "A go-to-market plan",
  input,
  output,
  query: (i) =>
    queryOf(i.product, i.segment, i.region, i.notes, "customers pricing positioning launch"),
  title: (i) => `GTM plan: ${i.product}`,
  instructions: [
    "Write a go-to-market plan for the product in the request, as a head of product marketing would present it.",
    "Fit the plan to the company's stage, market and timeline when given; phases run in order with measurable exit criteria.",
    "Channels are ranked by priority for this audience; risks come with mitigations.",
  ],
  maxTokens: 2000,
  needs: [
    {
      field: "product",
      fromBrand: (brand) =>
        brandValue("first product", brand.products?.[0]) ?? brandValue("name", brand.name),
      otherwise: "refuse",
      hint: "send `product`",
    },
  ],
});
