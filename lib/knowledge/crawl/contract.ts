import { createRoute, z } from "@hono/zod-openapi";
import {
  commonErrors,
  cursorParam,
  ErrorSchema,
  IdempotencyHeaders,
  idempotencyErrors,
  jsonBody,
  jsonResponse,
  limitParam,
  NoQuery,
  oneOrSeveralParam,
  pageOf,
} from "../../http/schemas.js";
import { RenderSchema } from "../../web/render/schema.js";
import { MAX_URL_LENGTH } from "../../web/url.js";
import { ChunkingSchema, MetadataSchema } from "../sources/attributes.js";
import { REFRESH_SCHEDULES } from "../sources/fields.js";

const DEFAULT_MAX_PAGES = 100;
const MAX_PAGES_LIMIT = 1000;
const DEFAULT_MAX_DEPTH = 10;
const MAX_DEPTH_LIMIT = 50;

const MAX_PATH_PATTERNS = 20;
const MAX_PATH_PATTERN_LENGTH = 200;

const pathPatterns = (description: string) =>
  z
    .array(
      z
        .string()
        .trim()
        .min(1)
        .max(
          MAX_PATH_PATTERN_LENGTH,
          `A path pattern has at most ${MAX_PATH_PATTERN_LENGTH} characters`,
        )
        .startsWith("/", "Path patterns start with /"),
    )
    .max(MAX_PATH_PATTERNS, `At most ${MAX_PATH_PATTERNS} path patterns`)
    .default([])
    .openapi({
      description: `${description} (at most ${MAX_PATH_PATTERNS} patterns of at most ${MAX_PATH_PATTERN_LENGTH} characters)`,
      example: ["/blog/*"],
    });

export const StartCrawlBody = z
  .strictObject({
    seedUrl: z.string().trim().min(1).max(MAX_URL_LENGTH).openapi({
      description: "Where the crawl starts; a public http(s) URL",
      example: "https://example.com/docs/",
    }),
    maxPages: z
      .number()
      .int()
      .min(1)
      .max(MAX_PAGES_LIMIT)
      .default(DEFAULT_MAX_PAGES)
      .openapi({
        description: `Pages indexed at most (default ${DEFAULT_MAX_PAGES}, at most ${MAX_PAGES_LIMIT}); a larger site ends \`completed\` at the cap`,
      }),
    maxDepth: z
      .number()
      .int()
      .min(0)
      .max(MAX_DEPTH_LIMIT)
      .default(DEFAULT_MAX_DEPTH)
      .openapi({
        description: `Links followed from the seed at most (default ${DEFAULT_MAX_DEPTH})`,
      }),
    includeSubdomains: z
      .boolean()
      .default(false)
      .openapi({ description: "Also crawl subdomains of the seed's host" }),
    includePaths: pathPatterns(
      "Crawl only paths matching one of these (instead of the seed's folder); `*` matches anything, a pattern covers everything under it",
    ),
    excludePaths: pathPatterns("Never crawl paths matching one of these"),
    refresh: z.enum(REFRESH_SCHEDULES).optional().openapi({
      description:
        "Crawl the site again daily or weekly with the same settings: changed pages are reindexed, new ones added within `maxPages`, pages gone (404, 410) marked; each run counts against the daily page quota",
    }),
    metadata: MetadataSchema.optional().openapi({
      description:
        "Attributes each page's new source gets (see `metadata` of `POST /api/knowledge`); a page the workspace has already keeps its own",
    }),
    chunking: ChunkingSchema.optional(),
    render: RenderSchema.optional(),
  })
  .openapi("StartCrawl");

const CrawlStatus = z.enum(["indexing", "completed", "failed", "cancelled"]);

export const CrawlSchema = z
  .strictObject({
    crawlId: z.string().openapi({ example: "crawl_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
    seedUrl: z.string(),
    status: CrawlStatus,
    maxPages: z.number().int(),
    maxDepth: z.number().int(),
    includeSubdomains: z.boolean(),
    includePaths: z.array(z.string()),
    excludePaths: z.array(z.string()),
    pagesDiscovered: z.number().int(),
    pagesIndexed: z.number().int(),
    pagesFailed: z.number().int(),
    pagesSkipped: z.number().int(),
    startedAt: z.string().openapi({ format: "date-time" }),
    finishedAt: z.string().nullable().openapi({ format: "date-time" }),
    lastError: z.string().nullable().openapi({ description: "Why the crawl failed" }),
    refresh: z.enum(REFRESH_SCHEDULES).nullable(),
    refreshOf: z
      .string()
      .nullable()
      .openapi({ description: "For a scheduled run: the crawl it repeats" }),
    metadata: MetadataSchema,
    chunking: ChunkingSchema,
    render: RenderSchema,
  })
  .openapi("Crawl");

const PageStatus = z.enum(["queued", "indexed", "skipped", "failed"]);

export const CrawlPageSchema = z
  .strictObject({
    url: z.string().openapi({ description: "The canonical URL" }),
    status: PageStatus,
    reason: z.string().nullable().openapi({
      description:
        "Why a page was skipped (robots, filter, trap, duplicate, redirect, non_html, http_error, empty, over_cap, source_limit: the workspace holds its cap of sources, cancelled) or the error code of a failure",
    }),
    message: z.string().nullable(),
    httpStatus: z.number().int().nullable(),
    depth: z.number().int(),
    sourceId: z
      .string()
      .nullable()
      .openapi({ description: "The knowledge source of an indexed page" }),
    discoveredAt: z.string().openapi({ format: "date-time" }),
    updatedAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("CrawlPage");

const CrawlParams = z.object({
  crawlId: z.string().openapi({
    param: { name: "crawlId", in: "path" },
    example: "crawl_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
  }),
});

const tags = ["Knowledge"];
const conflict = {
  409: {
    description: "The crawl has finished already",
    content: { "application/json": { schema: ErrorSchema } },
  },
};

export const startCrawl = createRoute({
  operationId: "startCrawl",
  method: "post",
  path: "/api/knowledge/crawl",
  tags,
  summary: "Crawl a site into the knowledge base",
  description:
    "Starts a crawl that stays on the seed's host and folder, reads its sitemap and links, honours robots.txt, and creates one `url` source per indexed page. A non-public or non-http(s) seed is a 400.",
  request: { headers: IdempotencyHeaders, query: NoQuery, body: jsonBody(StartCrawlBody) },
  responses: {
    200: jsonResponse(
      z.strictObject({
        crawlId: z.string(),
        status: z.literal("indexing"),
        maxPages: z.number().int(),
      }),
      "The crawl started",
    ),
    ...commonErrors,
    ...idempotencyErrors,
  },
});

export const getCrawl = createRoute({
  operationId: "getCrawl",
  method: "get",
  path: "/api/knowledge/crawl/{crawlId}",
  tags,
  summary: "Progress and outcome of a crawl",
  request: { params: CrawlParams, query: NoQuery },
  responses: { 200: jsonResponse(CrawlSchema, "The crawl"), ...commonErrors },
});

export const listCrawlPages = createRoute({
  operationId: "listCrawlPages",
  method: "get",
  path: "/api/knowledge/crawl/{crawlId}/pages",
  tags,
  summary: "What happened to each URL a crawl found",
  request: {
    params: CrawlParams,
    query: z.strictObject({
      limit: limitParam(50, 200),
      cursor: cursorParam,
      status: oneOrSeveralParam(PageStatus, "Only URLs in these states"),
    }),
  },
  responses: {
    200: jsonResponse(pageOf("pages", CrawlPageSchema), "One page of the report"),
    ...commonErrors,
  },
});

export const cancelCrawl = createRoute({
  operationId: "cancelCrawl",
  method: "delete",
  path: "/api/knowledge/crawl/{crawlId}",
  tags,
  summary: "Cancel a running crawl",
  description: "Pages not crawled yet are skipped; sources already created stay.",
  request: { params: CrawlParams, query: NoQuery },
  responses: {
    200: jsonResponse(CrawlSchema, "The cancelled crawl"),
    ...commonErrors,
    ...conflict,
  },
});

export const listCrawls = createRoute({
  operationId: "listCrawls",
  method: "get",
  path: "/api/knowledge/crawl",
  tags,
  summary: "List crawls, newest first",
  request: { query: z.strictObject({ limit: limitParam(20, 100), cursor: cursorParam }) },
  responses: {
    200: jsonResponse(pageOf("crawls", CrawlSchema), "One page of crawls"),
    ...commonErrors,
  },
});

export const patchCrawl = createRoute({
  operationId: "patchCrawl",
  method: "patch",
  path: "/api/knowledge/crawl/{crawlId}",
  tags,
  summary: "Schedule a crawl's refresh, or stop it",
  description:
    "`refresh` daily or weekly runs the crawl again on that schedule; null stops it. A scheduled run's own schedule cannot be set (409): set the first crawl's.",
  request: {
    params: CrawlParams,
    query: NoQuery,
    body: jsonBody(z.strictObject({ refresh: z.enum(REFRESH_SCHEDULES).nullable() })),
  },
  responses: { 200: jsonResponse(CrawlSchema, "The crawl"), ...commonErrors, ...conflict },
});

export const deleteCrawlSources = createRoute({
  operationId: "deleteCrawlSources",
  method: "delete",
  path: "/api/knowledge/crawl/{crawlId}/sources",
  tags,
  summary: "Delete the pages a crawl brought, unless something else holds them",
  description:
    "Cancels the crawl if it is running, then releases its hold on every page it or its scheduled runs indexed or refreshed (a scheduled run belongs to the crawl it repeats: either's id releases both). A page no other crawl and no add of its URL (`POST /api/knowledge`) still holds is deleted with its chunks and stored content; the others are kept. The crawl's record and report stay.",
  request: { params: CrawlParams, query: NoQuery },
  responses: {
    200: jsonResponse(
      z.strictObject({
        crawlId: z.string(),
        deleted: z.number().int().openapi({ description: "Pages nothing else held: deleted" }),
        kept: z.number().int().openapi({
          description: "Pages another crawl or an add of their URL still holds: kept",
        }),
      }),
      "How many pages were deleted and how many kept",
    ),
    ...commonErrors,
  },
});

export const crawlContract = [
  listCrawls,
  startCrawl,
  getCrawl,
  listCrawlPages,
  cancelCrawl,
  patchCrawl,
  deleteCrawlSources,
];
