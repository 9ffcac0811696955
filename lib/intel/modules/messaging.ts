import { z } from "@hono/zod-openapi";
import { documentInputs, phrase, phrases, text } from "./fields.js";
import { brandValue, defineModule, queryOf } from "./module.js";

const input = z
  .strictObject({
    ...documentInputs,
    product: text(
      300,
      "What the messaging is for: the brand, a product or an offer (the brand when left out)",
    )
      .optional()
      .openapi({ example: "Acme Analytics Team plan" }),
    segment: text(300, "The primary audience").optional(),
    audiences: z
      .array(text(200, "An audience"))
      .max(5)
      .optional()
      .describe("Audiences that each get a variant of the message (up to 5)"),
  })
  .openapi("MessagingInput");

const output = z
  .object({
    positioning: z
      .object({
        for: phrase("Target customer", 200),
        who: phrase("Their need or problem", 300),
        category: phrase("The market category", 120),
        benefit: phrase("The key benefit", 300),
        unlike: phrase("The main alternative", 200),
        differentiator: phrase("What makes it different", 300),
        statement: phrase("The positioning statement in one or two sentences", 600),
      })
      .describe("Positioning statement: for / who / unlike"),
    valueProposition: z.object({
      headline: phrase("Headline", 120),
      subheadline: phrase("Subheadline", 250),
      elevatorPitch: phrase("A 30-second pitch", 800),
    }),
    pillars: z
      .array(
        z.object({
          pillar: phrase("Name", 80),
          message: phrase("The message"),
          proofPoints: phrases("Evidence that backs it", 4),
        }),
      )
      .min(3)
      .max(5)
      .describe("Three to five messaging pillars"),
    audienceVariants: z
      .array(
        z.object({
          audience: phrase("Audience", 200),
          headline: phrase("Headline for them", 120),
          message: phrase("The message, tailored"),
          emphasis: phrases("Pillars or proof to lead with", 3, 120),
        }),
      )
      .max(5)
      .describe("One per audience in the request, or for the main buying roles"),
    tone: z.object({
      description: phrase("How the brand sounds"),
      attributes: phrases("Tone attributes", 5, 40),
    }),
    wordsToUse: phrases("Words and phrases to use", 12, 60),
    wordsToAvoid: phrases("Words and phrases to avoid", 12, 60),
  })
  .openapi("MessagingOutput");

/** A messaging framework: positioning, value proposition, pillars, variants and voice. */
export const messaging = defineModule({
  name: "messaging",
  summary: "A messaging framework",
  input,
  output,
  query: (i) =>
    queryOf(i.product, i.segment, i.audiences, i.notes, "value benefits differentiators proof"),
  title: (i) => `Messaging: ${i.product}`,
  instructions: [
    "Write a messaging framework for the subject of the request, as a product marketer would for the website, sales and campaigns.",
    "Every pillar carries proof points drawn from the data: features, numbers, customers; no empty superlatives.",
    "Follow the brand's tone of voice; words to avoid include jargon the audience would not use.",
  ],
  maxTokens: 1800,
  needs: [
    {
      field: "product",
      fromBrand: (brand) => brandValue("name", brand.name),
      otherwise: "refuse",
      hint: "send `product`",
    },
  ],
});
