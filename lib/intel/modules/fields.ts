import { z } from "@hono/zod-openapi";

/**
 * Building blocks of the modules' schemas. Descriptions use `.describe()`, which reaches both the
 * OpenAPI reference and the JSON schema the model answers in, so one sentence guides both.
 */

/** An input the caller types: trimmed, never empty, bounded. */
export const text = (max: number, description: string) =>
  z.string().trim().min(1).max(max).describe(description);

/** Free-form guidance every module accepts. */
export const notes = text(2000, "Anything else to take into account: focus, constraints, context")
  .optional()
  .openapi({ example: "Focus on mid-market accounts in the DACH region" });

/**
 * A free-form marketing input whose usual values are suggestions, not an enumeration: the
 * reference lists them as examples and any other short text is taken as the caller wrote it.
 */
export const suggested = (max: number, description: string, examples: string[]) =>
  text(max, `${description}, e.g. ${examples.join(", ")}`)
    .optional()
    .openapi({ examples });

/** The company's growth stage: what a plan or a metric set should fit. */
export const companyStage = suggested(
  100,
  "The company's stage, which the answer must fit (inferred when left out)",
  ["pre-launch", "launch", "early", "growth", "mature"],
);

/**
 * The inputs the interface document names for intel, which every module accepts beside its own
 * (a module may give one a sharper meaning, as `competitor` does with `domain` and `company`).
 */
export const documentInputs = {
  segment: text(300, "The target segment or audience").optional(),
  domain: text(2048, "The company's domain or URL, when not the brand profile's")
    .optional()
    .openapi({ example: "acme.com" }),
  company: text(200, "The company the answer is for, when not the brand profile's").optional(),
  stage: companyStage,
  notes,
};

/**
 * A phrase of the answer. Limits are hints to the model (strict structured output cannot
 * enforce them) and are checked when the answer returns, so they stay generous.
 */
export const phrase = (description: string, max = 400) => z.string().max(max).describe(description);

/** A non-empty list of phrases. */
export const phrases = (description: string, maxItems = 8, max = 300) =>
  z.array(z.string().max(max)).min(1).max(maxItems).describe(description);

export const priority = z.enum(["high", "medium", "low"]);

/** Who a person is in a purchase: the roles buying-committee models use. */
export const buyingRole = z
  .enum(["economic_buyer", "decision_maker", "champion", "influencer", "user", "gatekeeper"])
  .describe("Their role in the buying committee");

/** An objection and the answer to it, as sales enablement writes them. */
export const objections = (description: string) =>
  z
    .array(
      z.object({
        objection: phrase("The objection, in the buyer's words"),
        response: phrase("How to answer it, with the brand's proof"),
      }),
    )
    .min(1)
    .max(6)
    .describe(description);
