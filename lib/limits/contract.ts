import { createRoute, z } from "@hono/zod-openapi";
import { commonErrors, jsonResponse, NoQuery } from "../http/schemas.js";
import { QUOTA_KINDS, type QuotaKind } from "./quotas.js";

const QuotaUsageSchema = z
  .strictObject({
    used: z.number().int().openapi({ description: "Taken today", example: 12 }),
    limit: z.number().int().openapi({ description: "The daily limit", example: 2000 }),
    remaining: z.number().int().openapi({ description: "Left today: `limit - used`, at least 0" }),
    resetsAt: z.string().openapi({
      format: "date-time",
      description: "When the counter starts again from zero: the next midnight UTC",
      example: "2026-03-15T00:00:00.000Z",
    }),
  })
  .openapi("QuotaUsage");

const UsageSchema = z
  .strictObject({
    day: z.string().openapi({ description: "The UTC day counted", example: "2026-03-14" }),
    quotas: z.strictObject(
      Object.fromEntries(QUOTA_KINDS.map((kind) => [kind, QuotaUsageSchema])) as Record<
        QuotaKind,
        typeof QuotaUsageSchema
      >,
    ),
  })
  .openapi("Usage");

export const getUsage = createRoute({
  operationId: "getUsage",
  method: "get",
  path: "/api/usage",
  tags: ["Usage"],
  summary: "Today's usage of the daily quotas",
  description:
    "How much of each daily quota the workspace has used today (UTC): `crawl_pages` (a crawl reserves its `maxPages` and gives back what it did not index; scheduled refreshes count too), `upload_bytes` (multipart and presigned uploads), `model_calls` (chat answers, intel generations, competitor event briefs), `competitor_checks` (checks started through the API) and `exports` (workspace exports started, `POST /api/export`). Work that would pass a limit is refused with 429 `quota_exceeded`.",
  request: { query: NoQuery },
  responses: {
    200: jsonResponse(UsageSchema, "Usage of each quota today"),
    400: commonErrors[400],
    401: commonErrors[401],
    429: commonErrors[429],
    500: commonErrors[500],
  },
});

export const usageContract = [getUsage];
