import { z } from "@hono/zod-openapi";
import { documentInputs, phrase, phrases, text } from "./fields.js";
import { brandValue, defineModule, queryOf } from "./module.js";

const input = z
  .strictObject({
    ...documentInputs,
    segment: text(
      300,
      "Whose journey: the segment or persona (the brand profile's audience when left out)",
    )
      .optional()
      .openapi({ example: "Marketing managers at e-commerce brands" }),
    product: text(300, "The product the journey leads to, when not the whole offering").optional(),
  })
  .openapi("JourneyInput");

const STAGES = [
  "awareness",
  "consideration",
  "decision",
  "onboarding",
  "retention",
  "advocacy",
] as const;

// Six stages of lists: short ones keep the whole map within the output budget.
const list = (description: string) => phrases(description, 3, 150);

const output = z
  .object({
    persona: phrase("Who takes this journey", 200),
    summary: phrase("The journey's shape and biggest gaps, in two or three sentences", 800),
    stages: z
      .array(
        z.object({
          stage: z.enum(STAGES),
          goals: list("What the customer wants here"),
          touchpoints: list("Where they meet the brand"),
          channels: list("Channels in play"),
          actions: list("What the customer does"),
          questions: list("What they ask themselves"),
          emotion: z.object({
            score: z.number().int().min(-2).max(2).describe("-2 frustrated to +2 delighted"),
            feeling: phrase("How they feel, in a few words", 120),
          }),
          pains: list("Friction and pains"),
          contentNeeds: list("Content that moves them on"),
          kpis: list("How to measure this stage"),
        }),
      )
      .length(STAGES.length)
      .describe(`One entry per stage, in order: ${STAGES.join(", ")}`),
  })
  .openapi("JourneyOutput");

/** A customer journey map from awareness to advocacy. */
export const journey = defineModule({
  name: "journey",
  summary: "A customer journey map from awareness to advocacy",
  input,
  output,
  query: (i) =>
    queryOf(i.segment, i.product, i.notes, "customer journey buying onboarding questions"),
  title: (i, o) => `Customer journey: ${i.segment ?? o.persona}`,
  instructions: [
    "Map the customer journey of the segment in the request, from first awareness to advocacy, as a customer marketing lead would.",
    "Score emotions honestly: show where the experience dips and say why.",
    "KPIs are measurable (a rate, a count or a time), one metric per line.",
  ],
  maxTokens: 2000,
  needs: [
    {
      field: "segment",
      fromBrand: (brand) => brandValue("audience", brand.audience),
      otherwise: "infer_from_passages",
      hint: "send `segment`, save an `audience` in the brand profile, or add sources about your customers",
    },
  ],
});
