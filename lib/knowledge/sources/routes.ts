import { createRoute, z } from "@hono/zod-openapi";
import {
  booleanParam,
  commonErrors,
  cursorParam,
  errorResponse,
  IdempotencyHeaders,
  idempotencyErrors,
  jsonBody,
  jsonResponse,
  limitParam,
  pageOf,
} from "../../http/schemas.js";
import { MAX_QUERY_LENGTH, MAX_QUERY_TERMS } from "../../search/terms.js";
import { REFRESH_SCHEDULES, SOURCE_STATUSES, SOURCE_TYPES } from "./fields.js";

const Schedule = z.enum(REFRESH_SCHEDULES).openapi({
  description:
    "Fetch the page again daily or weekly (at an hour of the window picked per source) and reindex it only when its content changed",
});

export const SourceSchema = z
  .object({
    id: z.string().openapi({ example: "kb_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
    type: z.enum(SOURCE_TYPES),
    name: z.string(),
    source_url_or_path: z.string().nullable(),
    status: z.enum(SOURCE_STATUSES),
    chunk_count: z.number().int(),
    enabled: z.union([z.literal(0), z.literal(1)]),
    created_at: z.string().openapi({ format: "date-time" }),
    indexed_at: z.string().nullable().openapi({ format: "date-time" }),
    last_error: z.string().nullable(),
    error_code: z.string().nullable(),
    crawl_id: z.string().nullable().openapi({ description: "The crawl that found this page" }),
    refresh: Schedule.nullable(),
    last_checked_at: z.string().nullable().openapi({
      format: "date-time",
      description: "When the page was last fetched (URL sources)",
    }),
    last_changed_at: z.string().nullable().openapi({
      format: "date-time",
      description: "When the indexed content last changed",
    }),
    gone_at: z.string().nullable().openapi({
      format: "date-time",
      description: "When a refresh found the page gone (404 or 410); what was indexed stays",
    }),
  })
  .openapi("KnowledgeSource");

export const CreateSourceBody = z
  .strictObject({
    text: z.string().optional().openapi({ description: "Raw text to index (a `text` source)" }),
    url: z
      .string()
      .optional()
      .openapi({ description: "A public web page to index (a `url` source)" }),
    name: z.string().trim().min(1).max(200).optional(),
    refresh: Schedule.optional(),
  })
  .superRefine((body, ctx) => {
    if (body.refresh !== undefined && body.url === undefined) {
      ctx.addIssue({ code: "custom", message: "Only a `url` can be refreshed", path: ["refresh"] });
    }
    if (body.text !== undefined && body.url !== undefined) {
      ctx.addIssue({ code: "custom", message: "Give either `text` or `url`, not both", path: [] });
    } else if (body.text === undefined && body.url === undefined) {
      ctx.addIssue({ code: "custom", message: "Give `text` or `url`", path: [] });
    } else if (body.text !== undefined && body.text.trim() === "") {
      ctx.addIssue({ code: "custom", message: "`text` is empty", path: ["text"] });
    }
  })
  .openapi("CreateKnowledgeSource");

export const MultipartSourceBody = z
  .object({
    file: z
      .instanceof(File, { message: "Send the file in a `file` field" })
      .openapi({ type: "string", format: "binary", description: "The document (up to 4 MB)" }),
    name: z.string().trim().min(1).max(200).optional(),
  })
  .openapi("UploadKnowledgeFile");

const Accepted = z
  .object({
    id: z.string(),
    status: z.enum(SOURCE_STATUSES).openapi({
      description: "`indexing`, or for a URL added again the status of the source it has",
    }),
    created: z.boolean().optional().openapi({
      description:
        "URLs only: false when the workspace has a source for this (canonical) URL already; it is refreshed instead",
    }),
    type: z.literal("file").optional().openapi({ description: "File uploads only" }),
    name: z.string().optional().openapi({ description: "File uploads only" }),
    bytes: z.number().int().optional().openapi({ description: "File uploads only" }),
  })
  .openapi("IndexingAccepted");

const IdParams = z.object({
  id: z
    .string()
    .openapi({ param: { name: "id", in: "path" }, example: "kb_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
});

const tags = ["Knowledge"];

export const createSource = createRoute({
  operationId: "createSource",
  method: "post",
  path: "/api/knowledge",
  tags,
  summary: "Add a knowledge source",
  description: [
    "Creates a source and queues it for indexing: JSON with raw `text` (limit `MAX_TEXT_BYTES`,",
    "1,000,000 UTF-8 bytes by default) or a public `url`; or `multipart/form-data` with a `file`",
    "(PDF, DOCX, HTML, Markdown, plain text or CSV, up to 4 MB: larger files use",
    "`POST /api/knowledge/uploads`) and an optional `name`. Too large is a 413, another file type a 415.",
    "A URL is one source per workspace: a new one answers 201 `created: true`; one the workspace",
    "has already answers 200 `created: false` with that source's id, and is refreshed (unchanged",
    "content stays indexed as it is, changed content is reindexed). `refresh` schedules a URL.",
  ].join(" "),
  request: {
    headers: IdempotencyHeaders,
    body: {
      content: {
        "application/json": { schema: CreateSourceBody },
        "multipart/form-data": { schema: MultipartSourceBody },
      },
    },
  },
  responses: {
    200: jsonResponse(Accepted, "Queued for indexing, or a URL the workspace has already"),
    201: jsonResponse(Accepted, "A new URL source, queued for indexing"),
    ...commonErrors,
    ...idempotencyErrors,
  },
});

export const listSources = createRoute({
  operationId: "listSources",
  method: "get",
  path: "/api/knowledge",
  tags,
  summary: "List knowledge sources, newest first",
  request: {
    query: z.strictObject({
      limit: limitParam(50, 100),
      cursor: cursorParam,
      status: z.enum(SOURCE_STATUSES).optional(),
      enabled: booleanParam
        .optional()
        .openapi({ type: "string", enum: ["true", "false", "1", "0"] }),
      type: z.enum(SOURCE_TYPES).optional(),
      crawl_id: z
        .string()
        .max(64)
        .optional()
        .openapi({ description: "Only the pages of this crawl" }),
    }),
  },
  responses: {
    200: jsonResponse(pageOf("sources", SourceSchema), "One page of sources"),
    ...commonErrors,
  },
});

export const getSource = createRoute({
  operationId: "getSource",
  method: "get",
  path: "/api/knowledge/{id}",
  tags,
  summary: "Get one knowledge source",
  request: { params: IdParams },
  responses: { 200: jsonResponse(SourceSchema, "The source"), ...commonErrors },
});

export const patchSource = createRoute({
  operationId: "updateSource",
  method: "patch",
  path: "/api/knowledge/{id}",
  tags,
  summary: "Rename a source, enable or disable it, or schedule its refresh",
  description:
    "A disabled source leaves search, chat and intel at once; enabling brings it back without reindexing. A new `name` shows in search results at once. `refresh` (URL sources) sets or, with null, removes the schedule.",
  request: {
    params: IdParams,
    body: jsonBody(
      z
        .strictObject({
          enabled: z.boolean().optional(),
          name: z.string().trim().min(1).max(200).optional(),
          refresh: Schedule.nullable().optional(),
        })
        .refine((body) => Object.values(body).some((value) => value !== undefined), {
          message: "Give `enabled`, `name` or `refresh`",
        }),
    ),
  },
  responses: {
    200: jsonResponse(SourceSchema, "The updated source"),
    ...commonErrors,
    409: errorResponse("`conflict`: a `refresh` schedule for a source that is not a web page"),
  },
});

export const reindexSource = createRoute({
  operationId: "reindexSource",
  method: "post",
  path: "/api/knowledge/{id}/reindex",
  tags,
  summary: "Index a source again",
  request: { params: IdParams },
  responses: { 200: jsonResponse(Accepted, "Queued for indexing"), ...commonErrors },
});

export const deleteSource = createRoute({
  operationId: "deleteSource",
  method: "delete",
  path: "/api/knowledge/{id}",
  tags,
  summary: "Delete a source with its chunks and stored content",
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

export const SearchResultSchema = z
  .object({
    source_id: z.string(),
    chunk_index: z.number().int(),
    text: z.string(),
    score: z.number(),
    source_url_or_path: z.string().nullable(),
    name: z.string(),
    heading: z.string().nullable(),
    page: z.number().int().nullable(),
  })
  .openapi("SearchResult");

export const searchKnowledge = createRoute({
  operationId: "searchKnowledge",
  method: "post",
  path: "/api/knowledge/search",
  tags,
  summary: "Search the enabled, indexed sources",
  request: {
    body: jsonBody(
      z.strictObject({
        query: z
          .string()
          .trim()
          .min(1)
          .max(MAX_QUERY_LENGTH)
          .openapi({
            description: `At most ${MAX_QUERY_LENGTH} characters. Its first ${MAX_QUERY_TERMS} distinct words are searched as whole words; a repeated word counts once`,
          }),
        limit: z.number().int().min(1).max(50).default(10),
        source_ids: z
          .array(z.string().max(64))
          .max(100)
          .optional()
          .openapi({ description: "Only these sources (at most 100)" }),
        type: z
          .array(z.enum(SOURCE_TYPES))
          .max(3)
          .optional()
          .openapi({ description: "Only sources of these types" }),
        crawl_id: z
          .array(z.string().max(64))
          .max(20)
          .optional()
          .openapi({ description: "Only pages of these crawls (at most 20)" }),
      }),
    ),
  },
  responses: {
    200: jsonResponse(z.object({ results: z.array(SearchResultSchema) }), "Ranked chunks"),
    ...commonErrors,
  },
});

export const knowledgeRoutes = [
  createSource,
  listSources,
  searchKnowledge,
  getSource,
  patchSource,
  reindexSource,
  deleteSource,
];
