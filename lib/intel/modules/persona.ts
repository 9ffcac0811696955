import { z } from "@hono/zod-openapi";
import { buyingRole, documentInputs, objections, phrase, phrases, text } from "./fields.js";
import { brandValue, defineModule, queryOf } from "./module.js";

const input = z
  .strictObject({
    ...documentInputs,
    segment: text(
      300,
      "The market segment the persona belongs to (the brand profile's audience when left out)",
    )
      .optional()
      .openapi({ example: "Heads of growth at B2B SaaS companies with 50-500 employees" }),
    role: text(200, "A job title to build the persona around").optional(),
    company: text(200, "An example account or company type to anchor firmographics").optional(),
    region: text(100, "Market or region").optional(),
  })
  .openapi("PersonaInput");

const output = z
  .object({
    name: phrase("A memorable persona name, e.g. 'Growth-lead Grace'", 80),
    role: phrase("Job title and seniority", 150),
    segment: phrase("The segment they belong to", 300),
    summary: phrase("Who they are, in two or three sentences", 800),
    firmographics: z.object({
      industry: phrase("Industry or vertical", 150),
      companySize: phrase("Employees and/or revenue band", 150),
      region: phrase("Where they are based", 150),
      techStack: z.array(z.string().max(80)).max(10).describe("Tools they already use"),
    }),
    goals: phrases("What they are measured on and want to achieve"),
    pains: phrases("Problems and frustrations the brand can address"),
    jobsToBeDone: z
      .object({
        functional: phrases("Tasks they need done"),
        emotional: phrases("How they want to feel"),
        social: phrases("How they want to be seen"),
      })
      .describe("Jobs to be done"),
    buyingRole,
    buyingTriggers: phrases("Events that make them start looking for a solution", 6),
    objections: objections("What stops them from buying, and the answers"),
    decisionCriteria: phrases("What they compare options on, most important first", 6),
    channels: z
      .array(
        z.object({
          channel: phrase("A channel, community or publication", 100),
          use: phrase("What they use it for", 200),
        }),
      )
      .min(1)
      .max(8)
      .describe("Where they learn and get advice"),
    quotes: phrases("Illustrative quotes in their own voice; never attributed to real people", 4),
  })
  .openapi("PersonaOutput");

/** A buyer persona: who they are, what they need, how they buy. */
export const persona = defineModule({
  name: "persona",
  summary: "A buyer persona for a segment",
  input,
  output,
  query: (i) =>
    queryOf(i.segment, i.role, i.company, i.region, i.notes, "customers goals pains challenges"),
  title: (_, o) => `Persona: ${o.name}, ${o.role}`,
  instructions: [
    "Write a buyer persona for the segment in the request, as a product marketer would after customer interviews.",
    "Make it specific to this brand's offering and market: goals, pains and jobs the brand's products address.",
    "Quotes are illustrative lines in the persona's voice that sum up a pain or goal found in the data.",
  ],
  maxTokens: 1800,
  needs: [
    {
      field: "segment",
      fromBrand: (brand) => brandValue("audience", brand.audience),
      otherwise: "infer_from_passages",
      hint: "send `segment`, save an `audience` in the brand profile, or add sources about your customers",
    },
  ],
});
