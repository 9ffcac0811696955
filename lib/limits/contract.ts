import { createRoute, z } from "@hono/zod-openapi";
import { commonErrors, jsonResponse, NoQuery } from "../http/schemas.js";
import { CAP_KINDS, type CapKind } from "./caps.js";
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

const CapUsageSchema = z
  .strictObject({
    used: z.number().int().openapi({ description: "Held now", example: 120 }),
    limit: z
      .number()
      .int()
      .openapi({ description: "The most the workspace may hold", example: 10000 }),
    remaining: z.number().int().openapi({
      description: "Still free: `limit - used`, at least 0; deleting one frees a slot",
    }),
  })
  .openapi("CapUsage");

const UsageSchema = z
  .strictObject({
    day: z.string().openapi({ description: "The UTC day counted", example: "2026-03-14" }),
    quotas: z.strictObject(
      Object.fromEntries(QUOTA_KINDS.map((kind) => [kind, QuotaUsageSchema])) as Record<
        QuotaKind,
        typeof QuotaUsageSchema
      >,
    ),
    limits: z
      .strictObject(
        Object.fromEntries(CAP_KINDS.map((kind) => [kind, CapUsageSchema])) as Record<
          CapKind,
          typeof CapUsageSchema
        >,
      )
      .openapi({ description: "How many records of each kind the workspace holds, and may hold" }),
  })
  .openapi("Usage");

export const getUsage = createRoute({
  operationId: "getUsage",
  method: "get",
  path: "/api/usage",
  tags: ["Usage"],
  summary: "Today's usage of the daily quotas, and of the workspace caps",
  description:
    "How much of each daily quota the workspace has used today (UTC): `crawl_pages` (a crawl reserves its `maxPages` and gives back what it did not index; each URL added, added again or reindexed, and each scheduled refresh, counts one page, a scheduled crawl its `maxPages`), `upload_bytes` (multipart and presigned uploads, and text sources' UTF-8 bytes), `model_calls` (chat answers, intel generations, competitor event briefs), `competitor_checks` (checks started through the API, and one per competitor checked by the nightly sweep), `exports` (workspace exports started, `POST /api/export`) and `reindexes` (reindexes of text and file sources). Work that would pass a limit is refused with 429 `quota_exceeded`. `limits`: how many sources, competitors, saved artifacts and webhook endpoints the workspace holds and may hold (`MAX_*_PER_WORKSPACE`); a create past one is refused with 409 `limit_reached`, and deleting one frees a slot.",
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
