import { createRoute, z } from "@hono/zod-openapi";
import {
  capErrors,
  commonErrors,
  displayText,
  IdempotencyHeaders,
  jsonBody,
  jsonResponse,
  NoQuery,
} from "../../http/schemas.js";
import { ChunkingSchema, MetadataSchema } from "../sources/attributes.js";

export const CreateUploadBody = z
  .strictObject({
    filename: z.string().trim().min(1).max(255).openapi({ example: "pricing-2025.pdf" }),
    contentType: z.string().trim().max(255).openapi({ example: "application/pdf" }),
    bytes: z
      .number()
      .int()
      .positive()
      .openapi({ description: "Exact size of the file", example: 734_003 }),
    name: displayText(
      200,
      "The name the source shows under; the file's name by default",
    ).optional(),
    metadata: MetadataSchema.optional(),
    chunking: ChunkingSchema.optional(),
  })
  .openapi("CreateUpload");

export const PendingUploadSchema = z
  .strictObject({
    id: z.string().openapi({ example: "kb_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
    uploadUrl: z.string(),
    fields: z.record(z.string(), z.string()),
    method: z.literal("POST"),
    expiresAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("PendingUpload");

export const createUpload = createRoute({
  operationId: "createUpload",
  method: "post",
  path: "/api/knowledge/uploads",
  tags: ["Knowledge"],
  summary: "Start a presigned file upload",
  description: [
    "For files too large for a multipart `POST /api/knowledge` (over 4 MB), up to `MAX_UPLOAD_BYTES`",
    "(50 MB by default). Records a `file` source with status `awaiting_upload` and answers a",
    "presigned POST: send `fields` as form fields, then the file as the `file` field, to `uploadUrl`",
    "before `expiresAt`, e.g. `curl -F key=... -F Content-Type=... (every field) -F file=@report.pdf URL`.",
    "The policy accepts exactly `bytes` bytes of `contentType`. When the file arrives the source",
    "moves to `indexing`; a file of another size or type fails it (`upload_mismatch`), and one that",
    "never arrives fails it after the URL expires (`upload_expired`).",
    "Accepted: PDF, DOCX, HTML, Markdown, plain text and CSV (by content type or extension); others are a 415.",
    "`bytes` count against the daily `upload_bytes` quota (429 `quota_exceeded`); the awaited source",
    "takes a slot of `MAX_SOURCES_PER_WORKSPACE` (409 `limit_reached`, its bytes given back).",
  ].join(" "),
  request: { headers: IdempotencyHeaders, query: NoQuery, body: jsonBody(CreateUploadBody) },
  responses: {
    200: jsonResponse(PendingUploadSchema, "Upload there"),
    ...commonErrors,
    ...capErrors("sources", "MAX_SOURCES_PER_WORKSPACE"),
  },
});

export const uploadsContract = [createUpload];
