import { z } from "@hono/zod-openapi";
import { documentInputs, phrase, phrases, suggested, text } from "./fields.js";
import { defineModule, queryOf } from "./module.js";

const input = z
  .strictObject({
    ...documentInputs,
    goal: text(
      300,
      "The business objective the metrics serve (chosen to fit the brand and its stage when left out)",
    )
      .optional()
      .openapi({ example: "Grow self-serve revenue 40% this year" }),
    motion: suggested(100, "The go-to-market motion", ["product-led", "sales-led", "hybrid"]),
  })
  .openapi("KpiInput");

const metric = {
  name: phrase("Metric", 100),
  definition: phrase("What exactly is counted"),
  formula: phrase("How it is computed", 300),
  target: phrase("Target and time frame", 150),
  cadence: z.enum(["daily", "weekly", "monthly", "quarterly"]),
  owner: phrase("Team or role accountable", 100),
};

const output = z
  .object({
    northStar: z
      .object({ ...metric, rationale: phrase("Why it captures the value customers get") })
      .describe("The north-star metric"),
    funnel: z
      .array(
        z.object({
          stage: phrase(
            "Funnel stage, e.g. awareness, acquisition, activation, revenue, retention",
            60,
          ),
          metrics: z.array(z.object(metric)).min(1).max(4),
        }),
      )
      .min(1)
      .max(7)
      .describe("Input metrics per funnel stage, in funnel order"),
    guardrails: z
      .array(
        z.object({
          name: phrase("Metric", 100),
          why: phrase("What it protects"),
          threshold: phrase("Level that triggers action", 150),
        }),
      )
      .min(1)
      .max(5)
      .describe("Metrics that must not get worse while the others grow"),
    dataSources: z
      .array(
        z.object({
          source: phrase("System, e.g. CRM, product analytics, billing", 100),
          metrics: phrases("Metrics it feeds", 8, 100),
        }),
      )
      .min(1)
      .max(8),
  })
  .openapi("KpiOutput");

/** A KPI framework: north star, funnel metrics, guardrails and where the data comes from. */
export const kpi = defineModule({
  name: "kpi",
  summary: "A KPI framework",
  input,
  output,
  query: (i) => queryOf(i.goal, i.motion, i.notes, "metrics conversion revenue retention growth"),
  title: (i, o) => `KPI framework: ${i.goal ?? o.northStar.name}`,
  instructions: [
    "Design a KPI framework for the goal in the request, as a marketing operations lead would.",
    "Fit the metrics to the company's stage and go-to-market motion; targets are concrete, with a time frame.",
    "Every metric has an unambiguous definition and formula, a cadence and an owner.",
  ],
  maxTokens: 2000,
  needs: [{ field: "goal", otherwise: "infer", hint: "send `goal`" }],
});
