import { z } from "@hono/zod-openapi";

/** Schemas shared by every module's routes. */

export const ErrorSchema = z
  .object({
    error: z.object({
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
  z.object({
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
