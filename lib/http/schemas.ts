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

const errorResponse = (description: string) => ({
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

export const jsonBody = <T extends z.ZodType>(schema: T, description?: string) => ({
  required: true,
  ...(description ? { description } : {}),
  content: { "application/json": { schema } },
});

export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
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
