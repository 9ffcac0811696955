import { z } from "@hono/zod-openapi";
import { DISPLAY_TEXT_RULE, displayTextProblem } from "../display-text.js";

/**
 * Schemas shared by every module's routes, and their conventions: a query and a JSON body are
 * `z.strictObject`s (an unknown parameter or field is a 400 naming it; `NoQuery` for a route
 * without parameters), list filters take one value or several (`oneOrSeveralParam`,
 * `oneOrSeveral`), and an answer's objects are `z.strictObject`s defined whole (no `.extend()`,
 * which documents as an `allOf` no answer can match once its parts are closed), so the document
 * names every field an answer holds.
 */

export const ErrorSchema = z
  .strictObject({
    error: z.strictObject({
      code: z.string().openapi({ example: "validation_failed" }),
      message: z.string(),
      details: z.unknown().optional(),
      requestId: z.string().optional(),
    }),
  })
  .openapi("Error");

export const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorSchema } },
});

/** The error responses every authenticated route can give. */
export const commonErrors = {
  400: errorResponse("The request is not valid; `details.issues` names the fields"),
  401: errorResponse("Missing, malformed, unknown or revoked API key"),
  404: errorResponse("No such resource in this workspace"),
  413: errorResponse("The body is larger than allowed"),
  415: errorResponse("The body's media type is not accepted"),
  429: errorResponse("Too many requests or a quota is spent; see Retry-After"),
  500: errorResponse("Unexpected failure; quote the request id"),
} as const;

/**
 * A name or title the API shows back as a label (lib/display-text.ts): trimmed, at most `max`
 * characters, and one line of visible text, else a 400 naming the field. The reference states
 * the rule in the field's description, after the field's own `description`.
 */
export const displayText = (max: number, description?: string) =>
  z
    .string()
    .trim()
    .min(1, "Is empty")
    .max(max)
    .superRefine((text, ctx) => {
      const problem = text === "" ? undefined : displayTextProblem(text);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .openapi({
      description: `${description ? `${description}. ` : ""}${DISPLAY_TEXT_RULE}.`,
    });

/**
 * The `Idempotency-Key` header of the create routes. A route whose request declares these very
 * headers answers a retry with the same key with its first answer (`lib/http/idempotency.ts`).
 */
export const IdempotencyHeaders = z.object({
  "idempotency-key": z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7E]+$/, "Use visible ASCII characters only, e.g. a UUID")
    .optional()
    .openapi({
      description:
        "A key of your choice (a UUID) that makes a retry safe: for 24 hours, a request with the same key and body gets the first successful answer again (with `Idempotent-Replayed: true`) instead of creating twice. A failed attempt does not keep the key.",
      example: "5f0c1d4e-2b7a-4c1e-9a53-8d2f6f1b7c90",
    }),
});

/** The answers only a request with an `Idempotency-Key` can get. */
export const idempotencyErrors = {
  409: errorResponse(
    "`idempotency_key_in_use`: a request with this key is still being answered; retry after `Retry-After`",
  ),
  422: errorResponse(
    "`idempotency_key_reused`: this key was used with another body or route in the last 24 hours",
  ),
} as const;

/**
 * The answers of a create route whose records a workspace holds a capped number of
 * (lib/limits/caps.ts): `idempotencyErrors`, with `limit_reached` sharing its 409.
 */
export const capErrors = (what: string, setting: string) => ({
  ...idempotencyErrors,
  409: errorResponse(
    `\`limit_reached\`: the workspace holds its cap of ${what} (\`${setting}\`; \`details.cap\`, \`details.limit\`) and nothing was created; delete one first. Or \`idempotency_key_in_use\`: a request with this key is still being answered; retry after \`Retry-After\``,
  ),
});

export const jsonBody = <T extends z.ZodType>(schema: T, description?: string) => ({
  required: true,
  ...(description ? { description } : {}),
  content: { "application/json": { schema } },
});

export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** One page of a list: its items under `key`, and the cursor of the next page (null on the last). */
export const pageOf = <K extends string, T extends z.ZodType>(key: K, item: T) =>
  z.strictObject({
    ...({ [key]: z.array(item) } as Record<K, z.ZodArray<T>>),
    nextCursor: z.string().nullable(),
  });

export const limitParam = (fallback: number, max: number) =>
  z.coerce
    .number()
    .int()
    .min(1)
    .max(max)
    .default(fallback)
    .openapi({ description: `Page size, 1 to ${max} (default ${fallback})` });

export const cursorParam = z
  .string()
  .max(2048)
  .optional()
  .openapi({ description: "The `nextCursor` of the previous page" });

export const booleanParam = z
  .enum(["true", "false", "1", "0"])
  .transform((v) => v === "true" || v === "1");

/** A query flag: `true`/`false` or `1`/`0`, a boolean once parsed. */
export const flagParam = (description: string) =>
  booleanParam
    .optional()
    .openapi({ type: "string", enum: ["true", "false", "1", "0"], description });

/**
 * A flag of a JSON body that the API shows as 0/1 (`enabled`): `true`/`false` or `1`/`0`, a
 * boolean once parsed.
 */
export const flagField = (description: string) =>
  z
    .union([z.boolean(), z.number().int().min(0).max(1)])
    .openapi({}, { unionPreferredType: "oneOf" })
    .transform((value) => value === true || value === 1)
    .openapi({ description: `${description}: \`true\`/\`false\` or \`1\`/\`0\`` });

/** Most values a list filter takes at once. */
export const MAX_FILTER_VALUES = 20;

const ONE_OR_SEVERAL_VALUES =
  "Give one value; for several, repeat the parameter or separate the values with commas. An item matches when it has any of them";

/** A query parameter's value(s) as a list: a repeated parameter's values, each split at commas. */
const splitValues = (value: unknown) =>
  typeof value === "string" || Array.isArray(value)
    ? [value].flat().flatMap((part) => (typeof part === "string" ? part.split(",") : [part]))
    : value;

/**
 * A list filter of a query, the one shape of every list route: one value (`?severity=high`),
 * the parameter repeated (`?severity=high&severity=critical`) or values separated by commas
 * (`?severity=high,critical`); an array once parsed, and the service keeps items matching any of
 * its values (`Table.page`'s `anyOf`). For values that hold no comma (enumerations, ids).
 * Documented as an array in the form style, exploded, the comma spelling in the description.
 */
export const oneOrSeveralParam = <T extends z.ZodType<string, string>>(
  item: T,
  description: string,
  max = MAX_FILTER_VALUES,
) =>
  z
    .preprocess(splitValues, z.array(item).min(1).max(max))
    .optional()
    .openapi({
      description: `${description}. ${ONE_OR_SEVERAL_VALUES} (at most ${max})`,
      param: { style: "form", explode: true },
    });

/**
 * A list filter of a JSON body: one value or an array of at most `max`, an array once parsed.
 * Documented as `oneOf` the value and the array.
 */
export const oneOrSeveral = <T extends z.ZodType>(item: T, description: string, max: number) =>
  z
    .union([item, z.array(item).max(max)])
    .openapi({}, { unionPreferredType: "oneOf" })
    .transform((value) => (Array.isArray(value) ? value : [value]) as z.output<T>[])
    .openapi({ description: `${description}: one value, or an array of at most ${max}` });

/** The query of a route that takes no parameter: any parameter is a 400 naming it. */
export const NoQuery = z.strictObject({});
