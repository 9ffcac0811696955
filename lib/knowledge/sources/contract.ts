import { createRoute, z } from "@hono/zod-openapi";
import {
  capErrors,
  commonErrors,
  cursorParam,
  displayText,
  errorResponse,
  flagField,
  flagParam,
  IdempotencyHeaders,
  jsonBody,
  jsonResponse,
  limitParam,
  NoQuery,
  oneOrSeveral,
  oneOrSeveralParam,
  pageOf,
} from "../../http/schemas.js";
import { MAX_QUERY_LENGTH, MAX_QUERY_TERMS } from "../../search/terms.js";
import { RenderSchema } from "../../web/render/schema.js";
import { FilterSchema } from "../retrieval/filter-expression.js";
import { ChunkingSchema, jsonField, MetadataSchema } from "./attributes.js";

/** The longest span `GET /api/knowledge/{id}/text` answers at once. */
export const MAX_TEXT_SPAN = 200_000;

import { REFRESH_SCHEDULES, SOURCE_STATUSES, SOURCE_TYPES } from "./fields.js";

const Schedule = z.enum(REFRESH_SCHEDULES).openapi({
  description:
    "Fetch the page again daily or weekly (at an hour of the window picked per source) and reindex it only when its content changed",
});

export const SourceSchema = z
  .strictObject({
    id: z.string().openapi({ example: "kb_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
    type: z.enum(SOURCE_TYPES),
    name: z.string(),
    source_url_or_path: z.string().openapi({
      description: "The page's URL, or the uploaded file's name; empty for raw text",
    }),
    status: z.enum(SOURCE_STATUSES),
    chunk_count: z.number().int(),
    enabled: z.union([z.literal(0), z.literal(1)]),
    created_at: z.string().openapi({ format: "date-time" }),
    indexed_at: z.string().nullable().openapi({ format: "date-time" }),
    last_error: z.string().nullable(),
    error_code: z.string().nullable(),
    crawl_id: z.string().nullable().openapi({
      description:
        "The first crawl that added this page (for a scheduled run's page, the crawl it repeats); null when it was added directly. A page can belong to several crawls: `GET /api/knowledge?crawl_id=` lists each crawl's pages",
    }),
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
    metadata: MetadataSchema,
    chunking: ChunkingSchema,
    render: RenderSchema.nullable().openapi({
      description: "URL sources: when the page is rendered in a browser; null for other types",
    }),
  })
  .openapi("KnowledgeSource");

/** The name a source shows under, in lists, search results and citations. */
const sourceName = displayText(
  200,
  "The name the source shows under; by default a text's first line, a page's URL or a file's name",
);

export const CreateSourceBody = z
  .strictObject({
    text: z.string().optional().openapi({ description: "Raw text to index (a `text` source)" }),
    url: z
      .string()
      .optional()
      .openapi({ description: "A public web page to index (a `url` source)" }),
    name: sourceName.optional(),
    refresh: Schedule.optional(),
    metadata: MetadataSchema.optional(),
    chunking: ChunkingSchema.optional(),
    render: RenderSchema.optional(),
  })
  .superRefine((body, ctx) => {
    if (body.refresh !== undefined && body.url === undefined) {
      ctx.addIssue({ code: "custom", message: "Only a `url` can be refreshed", path: ["refresh"] });
    }
    if (body.render !== undefined && body.url === undefined) {
      ctx.addIssue({ code: "custom", message: "Only a `url` is rendered", path: ["render"] });
    }
    if (body.text !== undefined && body.url !== undefined) {
      // The issue is about both fields: each is named, so a client can mark either.
      for (const field of ["text", "url"]) {
        ctx.addIssue({
          code: "custom",
          message: "Give either `text` or `url`, not both",
          path: [field],
        });
      }
    } else if (body.text === undefined && body.url === undefined) {
      for (const field of ["text", "url"]) {
        ctx.addIssue({ code: "custom", message: "Give `text` or `url`", path: [field] });
      }
    } else if (body.text !== undefined && body.text.trim() === "") {
      ctx.addIssue({ code: "custom", message: "`text` is empty", path: ["text"] });
    }
  })
  .openapi("CreateKnowledgeSource");

export const MultipartSourceBody = z
  .strictObject({
    file: z.instanceof(File, { message: "Send the file in a `file` field" }).openapi({
      type: "string",
      format: "binary",
      description: "The document (up to 4 MiB, 4,194,304 bytes)",
    }),
    name: sourceName.optional(),
    metadata: jsonField(MetadataSchema, "metadata").optional(),
    chunking: jsonField(ChunkingSchema, "chunking").optional(),
  })
  .openapi("UploadKnowledgeFile");

const Accepted = z
  .strictObject({
    id: z.string(),
    status: z.literal("indexing").openapi({
      description:
        "Always `indexing`: the source reads `indexing` until this indexing settles, then `indexed` (or `failed`)",
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
    "Creates a source and queues it for indexing: JSON with exactly one of raw `text` (limit",
    "`MAX_TEXT_BYTES`, 1,000,000 UTF-8 bytes by default) or a public `url` (both, or neither, is a",
    "400 naming them); or `multipart/form-data` with a `file` (PDF, DOCX, HTML, Markdown, plain",
    "text or CSV, up to 4 MiB, 4,194,304 bytes: larger files use",
    "`POST /api/knowledge/uploads`) and an optional `name`. Too large is a 413, another file type a 415.",
    "Every accepted source answers 200 with `status: indexing`. A URL is one source per workspace:",
    "a new one answers `created: true`; one the workspace has already answers `created: false` with",
    "that source's id and is refreshed as `POST /api/knowledge/{id}/reindex` would: it reads",
    "`indexing` until the refresh settles, then `indexed` (unchanged content settles at once,",
    "without indexing again), and what it had indexed keeps answering searches meanwhile.",
    "`refresh` schedules a URL. Each counts against a daily quota (429 `quota_exceeded` naming it):",
    "a text its UTF-8 bytes and a file its size (`upload_bytes`), a URL, new or known, one page",
    "(`crawl_pages`). A workspace holding `MAX_SOURCES_PER_WORKSPACE` sources (10,000 by default)",
    "is refused a new one with 409 `limit_reached` (adding a URL it has already still refreshes it).",
    "`metadata` sets the attributes search `filters` match; `chunking` how the text is cut into",
    "chunks (a multipart form sends either as JSON in a field of that name). A URL the workspace",
    "has already keeps its own.",
  ].join(" "),
  request: {
    headers: IdempotencyHeaders,
    query: NoQuery,
    body: {
      content: {
        "application/json": { schema: CreateSourceBody },
        "multipart/form-data": { schema: MultipartSourceBody },
      },
    },
  },
  responses: {
    200: jsonResponse(Accepted, "Queued for indexing (a URL the workspace has: refreshed)"),
    ...commonErrors,
    ...capErrors("sources", "MAX_SOURCES_PER_WORKSPACE"),
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
      status: oneOrSeveralParam(z.enum(SOURCE_STATUSES), "Only sources in these states"),
      enabled: flagParam("Only enabled (`true`, `1`) or disabled (`false`, `0`) sources"),
      type: oneOrSeveralParam(z.enum(SOURCE_TYPES), "Only sources of these types"),
      crawl_id: oneOrSeveralParam(
        z.string().max(64),
        "Only the pages these crawls indexed or refreshed: exactly the `sourceId`s of their `/pages` reports, so as many as their `pagesIndexed`",
      ),
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
  request: { params: IdParams, query: NoQuery },
  responses: { 200: jsonResponse(SourceSchema, "The source"), ...commonErrors },
});

export const patchSource = createRoute({
  operationId: "updateSource",
  method: "patch",
  path: "/api/knowledge/{id}",
  tags,
  summary: "Rename a source, enable or disable it, schedule its refresh or set its metadata",
  description:
    "A disabled source leaves search, chat and intel at once; enabling brings it back without reindexing. A new `name` shows in search results at once. `refresh` (URL sources) sets or, with null, removes the schedule. `metadata` replaces the source's attributes as a whole (`{}` removes them) and counts in the very next search's `filters`.",
  request: {
    params: IdParams,
    query: NoQuery,
    body: jsonBody(
      z
        .strictObject({
          enabled: flagField("Whether search, chat and intel use the source").optional(),
          name: sourceName.optional(),
          refresh: Schedule.nullable().optional(),
          metadata: MetadataSchema.optional(),
        })
        .refine((body) => Object.values(body).some((value) => value !== undefined), {
          message: "Give `enabled`, `name`, `refresh` or `metadata`",
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
  description:
    "Queues the source for indexing again (a URL is fetched again; unchanged content keeps its chunks). Counted when accepted: a URL source's reindex is one page of `crawl_pages`, a text or file source's one of `reindexes`; a spent quota is a 429 `quota_exceeded` naming it, with `Retry-After`.",
  request: { params: IdParams, query: NoQuery },
  responses: {
    200: jsonResponse(Accepted, "Queued for indexing"),
    ...commonErrors,
    409: errorResponse("`conflict`: a presigned upload's file has not arrived yet"),
  },
});

export const deleteSource = createRoute({
  operationId: "deleteSource",
  method: "delete",
  path: "/api/knowledge/{id}",
  tags,
  summary: "Delete a source with its chunks and stored content",
  request: { params: IdParams, query: NoQuery },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

export const SearchResultSchema = z
  .strictObject({
    source_id: z.string(),
    chunk_index: z.number().int(),
    text: z.string(),
    score: z.number(),
    source_url_or_path: z.string().nullable(),
    name: z.string(),
    heading: z.string().nullable(),
    page: z.number().int().nullable(),
    char_start: z.number().int().nullable().openapi({
      description:
        "Where `text` starts in the source's extracted text: `GET /api/knowledge/{id}/text?start=&end=` with these two answers exactly `text`. Null for sources indexed before spans were recorded (reindex them)",
    }),
    char_end: z.number().int().nullable().openapi({ description: "Where `text` ends (exclusive)" }),
    heading_path: z.array(z.string()).openapi({
      description: "The headings above the passage, outermost first",
    }),
    url: z.string().nullable().openapi({
      description:
        "Web pages: the page's URL with a text fragment (`#:~:text=`) that opens it at the passage",
    }),
  })
  .openapi("SearchResult");

export const searchKnowledge = createRoute({
  operationId: "searchKnowledge",
  method: "post",
  path: "/api/knowledge/search",
  tags,
  summary: "Search the enabled, indexed sources",
  request: {
    query: NoQuery,
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
        source_ids: oneOrSeveral(z.string().max(64), "Only these sources", 100).optional(),
        type: oneOrSeveral(z.enum(SOURCE_TYPES), "Only sources of these types", 3).optional(),
        crawl_id: oneOrSeveral(z.string().max(64), "Only pages of these crawls", 20).optional(),
        filters: FilterSchema.optional(),
      }),
    ),
  },
  responses: {
    200: jsonResponse(
      z.strictObject({
        results: z.array(SearchResultSchema),
        reranked: z.boolean().optional().openapi({
          description:
            "Present when a reranker is configured (RERANK_MODEL): false when it failed or took too long and the results are the first stage's",
        }),
        rerank_error: z.string().optional().openapi({ description: "Why reranking failed" }),
      }),
      "Ranked chunks",
    ),
    ...commonErrors,
  },
});

/** Questions one `POST /api/knowledge/eval` takes: each runs one search per ranking. */
export const MAX_EVAL_QUESTIONS = 50;

const Scores = z
  .strictObject({
    recall_at_k: z
      .number()
      .openapi({ description: "Share of the answering items found in the first `k`" }),
    mrr: z.number().openapi({ description: "Mean of 1 / the rank of the first answering item" }),
    ndcg_at_10: z
      .number()
      .openapi({ description: "Normalized discounted cumulative gain of the first 10" }),
  })
  .nullable()
  .openapi({ description: "Null when the configuration does not offer this ranking" });

export const evaluateSearch = createRoute({
  operationId: "evaluateSearch",
  method: "post",
  path: "/api/knowledge/eval",
  tags,
  summary: "Measure search on your own questions",
  description: `Searches each question (at most ${MAX_EVAL_QUESTIONS}) lexically, hybrid (with an embedding model) and reranked (with RERANK_MODEL), and reports recall@k, MRR and nDCG@10 of each ranking, averaged. A question names the sources that answer it (\`source_ids\`: any of their passages counts, each source once) or the passages (\`passages\`). \`npm run eval -- questions.jsonl\` sends a larger set in batches.`,
  request: {
    query: NoQuery,
    body: jsonBody(
      z.strictObject({
        questions: z
          .array(
            z
              .strictObject({
                question: z.string().trim().min(1).max(MAX_QUERY_LENGTH),
                source_ids: z.array(z.string().max(64)).min(1).max(100).optional(),
                passages: z
                  .array(
                    z.strictObject({
                      source_id: z.string().max(64),
                      chunk_index: z.number().int().min(0),
                    }),
                  )
                  .min(1)
                  .max(100)
                  .optional(),
              })
              .refine((q) => (q.source_ids === undefined) !== (q.passages === undefined), {
                message: "Give the answering `source_ids` or `passages`",
                path: ["source_ids"],
              }),
          )
          .min(1)
          .max(MAX_EVAL_QUESTIONS),
        k: z.number().int().min(1).max(50).default(5),
      }),
    ),
  },
  responses: {
    200: jsonResponse(
      z
        .strictObject({
          k: z.number().int(),
          questions: z.number().int(),
          modes: z.strictObject({ lexical: Scores, hybrid: Scores, reranked: Scores }),
        })
        .openapi("SearchEvaluation"),
      "The scores of each ranking",
    ),
    ...commonErrors,
  },
});

export const getSourceText = createRoute({
  operationId: "getSourceText",
  method: "get",
  path: "/api/knowledge/{id}/text",
  tags,
  summary: "Read a span of a source's extracted text",
  description: `The text the indexed revision was chunked from, from \`start\` to \`end\` (character offsets, UTF-16 code units, end exclusive, at most ${MAX_TEXT_SPAN.toLocaleString("en")} characters): a search result's or citation's \`char_start\` and \`char_end\` give exactly its passage; widen them to show it in context. Offsets past the end are cut to it. 409 \`conflict\` when the source has no indexed text yet, or was indexed before texts were kept (reindex it).`,
  request: {
    params: IdParams,
    query: z
      .strictObject({
        start: z.coerce.number().int().min(0).default(0),
        end: z.coerce
          .number()
          .int()
          .min(0)
          .optional()
          .openapi({
            description: `Default: \`start\` + ${MAX_TEXT_SPAN.toLocaleString("en")}, or the end of the text`,
          }),
      })
      .refine(
        (q) => q.end === undefined || (q.end >= q.start && q.end - q.start <= MAX_TEXT_SPAN),
        {
          message: `\`end\` is from \`start\` to \`start\` + ${MAX_TEXT_SPAN}`,
          path: ["end"],
        },
      ),
  },
  responses: {
    200: jsonResponse(
      z.strictObject({
        text: z.string(),
        start: z.number().int(),
        end: z.number().int(),
        length: z.number().int().openapi({ description: "The whole text's length" }),
      }),
      "The span",
    ),
    ...commonErrors,
    409: errorResponse("`conflict`: no indexed text is kept for this source"),
  },
});

export const sourcesContract = [
  createSource,
  listSources,
  searchKnowledge,
  evaluateSearch,
  getSource,
  getSourceText,
  patchSource,
  reindexSource,
  deleteSource,
];
