import { createRoute, z } from "@hono/zod-openapi";
import {
  commonErrors,
  errorResponse,
  IdempotencyHeaders,
  idempotencyErrors,
  jsonResponse,
  NoQuery,
} from "../../http/schemas.js";
import { EXPORT_RETENTION_DAYS } from "./exports.js";
import { BUNDLE_FORMAT, RECORD_KINDS, type RecordKind } from "./format.js";

const tags = ["Workspace"];

const CountsSchema = z
  .strictObject(
    Object.fromEntries(RECORD_KINDS.map((kind) => [kind, z.number().int()])) as Record<
      RecordKind,
      z.ZodNumber
    >,
  )
  .openapi("ExportCounts", {
    description: "Records in the bundle so far, by kind (what the last written part reached)",
  });

export const ExportSchema = z
  .strictObject({
    exportId: z.string().openapi({ example: "exp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
    status: z.enum(["queued", "running", "ready", "failed", "expired"]).openapi({
      description: `\`queued\` and \`running\` until the bundle is written, then \`ready\` (download it), \`failed\` (see \`error\`; start another) or, ${EXPORT_RETENTION_DAYS} days after it was ready, \`expired\``,
    }),
    createdAt: z.string().openapi({ format: "date-time" }),
    completedAt: z.string().nullable().openapi({ format: "date-time" }),
    counts: CountsSchema,
    bytes: z.number().int().openapi({ description: "Bytes of the bundle written so far" }),
    error: z.string().nullable(),
    download: z
      .strictObject({
        url: z.string().openapi({
          description:
            "A presigned URL of the bundle: fetch it without the API key, before `expiresAt`",
        }),
        expiresAt: z.string().openapi({ format: "date-time" }),
        contentType: z.literal("application/x-ndjson"),
      })
      .nullable()
      .openapi({ description: "Once `ready`; ask again for a fresh URL when it has expired" }),
    availableUntil: z.string().nullable().openapi({
      format: "date-time",
      description: "When the bundle is deleted; null until it is ready",
    }),
  })
  .openapi("Export");

const ExportParams = z.object({
  exportId: z.string().openapi({
    param: { name: "exportId", in: "path" },
    example: "exp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
  }),
});

export const startExport = createRoute({
  operationId: "startExport",
  method: "post",
  path: "/api/export",
  tags,
  summary: "Export the whole workspace",
  description: `Starts writing the workspace's data to one NDJSON bundle (format \`${BUNDLE_FORMAT}\`): a header line, then one JSON object per record, each with its \`kind\`: the \`workspace\`, the \`brand\` profile, today's \`usage\`, every \`source\` with its text as indexed (its chunks), \`crawl\`, \`artifact\`, \`competitor\` with its latest snapshot, \`event\` and \`webhook\` endpoint (never its secret); a line \`{"kind":"end","counts":{...}}\` closes it. A worker writes it, however large the workspace: poll \`GET /api/export/{exportId}\` until it is \`ready\`, then download it from its short-lived URL. Counts against the daily \`exports\` quota.`,
  request: { headers: IdempotencyHeaders, query: NoQuery },
  responses: {
    202: jsonResponse(ExportSchema, "Queued"),
    ...commonErrors,
    ...idempotencyErrors,
    503: errorResponse("The export could not be queued; try again"),
  },
});

export const getExport = createRoute({
  operationId: "getExport",
  method: "get",
  path: "/api/export/{exportId}",
  tags,
  summary: "An export's progress and download",
  description: `Where the export stands; once \`ready\`, \`download.url\` fetches the bundle (a new URL each time you ask). Bundles are deleted ${EXPORT_RETENTION_DAYS} days after they are ready.`,
  request: { params: ExportParams, query: NoQuery },
  responses: { 200: jsonResponse(ExportSchema, "The export"), ...commonErrors },
});

export const exportContract = [startExport, getExport];
