import { z } from "zod";
import { CHECK_CAPACITY } from "./competitors/capacity.js";
import { type CapLimits, DEFAULT_CAPS } from "./limits/caps.js";
import { WORKER_SHARES } from "./limits/worker-shares.js";
import { llmEnv } from "./llm/settings.js";
import { WEBHOOK_CAPACITY } from "./webhooks/capacity.js";

/** Messages are retried this often before they land in the dead-letter queue (AWS and local alike). */
export const MAX_RECEIVE_COUNT = 5;

/**
 * Days a work queue keeps a message (SQS deletes it then, delivered or not): a source queued
 * longer than this has no message left, the only queued source the watchdog fails.
 */
export const QUEUE_RETENTION_DAYS = 4;

const flag = z
  .enum(["true", "false", "1", "0"])
  .default("false")
  .transform((v) => v === "true" || v === "1");

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** Origins whose pages may read the API's answers: `*` (any), or a comma-separated list. */
export type CorsOrigins = "*" | string[];

const corsOrigins = z
  .string()
  .default("")
  .transform((value, ctx): CorsOrigins => {
    if (value.trim() === "*") return "*";
    const origins = value
      .split(",")
      .map((origin) => origin.trim())
      .filter(Boolean);
    for (const origin of origins) {
      if (URL.canParse(origin) && new URL(origin).origin === origin) continue;
      ctx.addIssue({
        code: "custom",
        message: `${origin} is not an origin (scheme://host[:port], no path or trailing slash)`,
      });
    }
    return origins;
  });

const fields = z.object({
  TABLE_NAME: z.string().min(1),
  BUCKET_NAME: z.string().min(1),
  INDEX_QUEUE_URL: z.string().url(),
  CRAWL_QUEUE_URL: z.string().url(),
  CHECKS_QUEUE_URL: z.string().url(),
  WEBHOOKS_QUEUE_URL: z.string().url(),
  /** Set wherever the exports run (the stack and the local runtime set every queue's URL). */
  EXPORTS_QUEUE_URL: z.string().url().optional(),
  /**
   * The KMS key (id, ARN or alias) under which webhook signing secrets are sealed
   * (lib/store/keys.ts). The stack sets its key's ARN; the local runtime its own key's.
   */
  DATA_KEY_ID: z.string().min(1).optional(),
  /**
   * The console's public address (the API's root: `https://…/v1/` on AWS): Slack and Teams
   * notifications and email digests link to events there. Without it they carry no link.
   */
  CONSOLE_URL: z.string().url().optional(),
  /** Local development and tests only: lets URL sources, crawls and checks reach private hosts. */
  ALLOW_PRIVATE_URLS: flag,
  /** Browser origins allowed to call the API: none by default, `*` for any. */
  CORS_ORIGINS: corsOrigins,
  /**
   * Least time between two requests of one crawl to the same host: the floor of its adaptive
   * pace (which starts at 1 s and follows the host's response times; lib/web/pace.ts). 0 turns
   * the pace off (tests and benchmarks only).
   */
  CRAWL_POLITENESS_MS: z.coerce.number().int().min(0).default(100),
  /** A crawl without progress for this long is checked, nudged, then failed. */
  CRAWL_STALL_SECONDS: positiveInt(900),
  /** How often a running crawl is checked for progress. */
  CRAWL_WATCH_SECONDS: z.coerce.number().int().positive().max(900).default(300),
  /**
   * The Chromium that renders pages needing scripts (lib/web/render), one per process, started
   * on the first such page. Without one there, those pages fail with `needs_browser`.
   */
  CHROMIUM_PATH: z.string().min(1).default("/usr/bin/chromium"),
  /**
   * The function that renders pages on AWS (functions/render.ts), which the stack sets: where it
   * is set, pages that need scripts are rendered there instead of by CHROMIUM_PATH in-process.
   */
  RENDER_FUNCTION_NAME: z.string().min(1).optional(),
  /**
   * Where the persisted search index lives: a local directory (the local runtime uses
   * `<DATA_DIR>/search`) or an `s3://bucket/prefix` URI. Default: `s3://<BUCKET_NAME>/search`.
   */
  SEARCH_INDEX_URI: z.string().min(1).optional(),
  /** Path-style S3 addressing, needed by S3-compatible emulators. */
  S3_FORCE_PATH_STYLE: flag,
  /** Largest text source accepted by the API, in UTF-8 bytes. */
  MAX_TEXT_BYTES: positiveInt(1_000_000),
  /** Target chunk size and overlap, in characters. */
  CHUNK_SIZE: positiveInt(1200),
  CHUNK_OVERLAP: z.coerce.number().int().min(0).default(200),
  /**
   * A second-stage model that reorders search's first candidates (`POST {RERANK_BASE_URL}/rerank`,
   * lib/knowledge/retrieval/reranker.ts); unset, search ranks as it always has. The base URL
   * defaults to OPENAI_BASE_URL, the key to OPENAI_API_KEY.
   */
  RERANK_MODEL: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z.string().trim().min(1).optional(),
  ),
  RERANK_BASE_URL: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z.url({ protocol: /^https?$/ }).optional(),
  ),
  RERANK_API_KEY: z.preprocess((v) => (v === "" ? undefined : v), z.string().trim().optional()),
  /** The reranker's whole budget per search; past it the first stage answers. */
  RERANK_TIMEOUT_MS: positiveInt(2_000),
  /** First-stage candidates sent to the reranker. */
  RERANK_CANDIDATES: z.coerce.number().int().min(1).max(100).default(30),
  /** How long a verified API key stays cached in a warm process, in seconds. */
  KEY_CACHE_SECONDS: z.coerce.number().int().min(0).default(30),
  /** How long a warm function trusts a workspace's webhook subscriptions before reading them again. */
  WEBHOOK_CACHE_SECONDS: z.coerce.number().int().min(0).default(15),
  /**
   * Seconds between a webhook delivery's attempts, comma-separated, one attempt more than entries:
   * by default Standard Webhooks' reference schedule, 8 attempts over about a day.
   */
  WEBHOOK_RETRY_SECONDS: z
    .string()
    .regex(/^\d+(,\d+){0,19}$/, "at most 20 comma-separated whole seconds, such as 5,300,1800")
    .default("5,300,1800,7200,18000,28800,28800")
    .transform((value) => value.split(",").map(Number)),
  /**
   * Longest wait for a webhook endpoint's answer to one attempt; the attempt holds its endpoint
   * (and a slot of its workspace) that long plus a margin, so keep it well below the webhooks
   * worker's timeout (docs/webhooks.md#fairness).
   */
  WEBHOOK_TIMEOUT_MS: positiveInt(WEBHOOK_CAPACITY.attemptTimeoutMs),
  /**
   * The sender of email digests (an address of a domain verified in Amazon SES). The stack grants
   * the webhooks worker SES's SendEmail for this sender alone; unset, email digests cannot be sent.
   */
  MAIL_FROM: z.email().optional(),
  /**
   * Local development and tests: email is written as `.eml` files into this folder (the local
   * runtime uses `<DATA_DIR>/outbox`) instead of sent through Amazon SES.
   */
  MAIL_OUTBOX_DIR: z.string().min(1).optional(),
  /** The hour of the day (UTC) email digests go out; weekly ones on Mondays at that hour. */
  DIGEST_HOUR: z.coerce.number().int().min(0).max(23).default(7),
  /**
   * A source whose last indexing attempt began this many minutes ago without a result (it crashed
   * or timed out, and no retry follows) is failed by the watchdog. Longer than the index worker's
   * timeout, so that a last attempt still running is never failed.
   */
  LAST_ATTEMPT_STALL_MINUTES: positiveInt(5),
  /** Time a queued competitor check may spend reading a site (API checks get less). */
  CHECK_BUDGET_MS: positiveInt(45_000),
  /** Days a competitor's snapshots stay in its history (`GET .../history`, `.../prices`). */
  SNAPSHOT_RETENTION_DAYS: positiveInt(365),
  /** Requests per queued competitor check, robots.txt included. */
  CHECK_MAX_FETCHES: positiveInt(25),
  /** Least time between two requests of a check to one host. */
  CHECK_POLITENESS_MS: z.coerce.number().int().min(0).default(1_000),
  /** Longest single request of a check. */
  CHECK_REQUEST_TIMEOUT_MS: positiveInt(10_000),
  /** Competitor checks run at once in one worker invocation: the batch size the model gives. */
  CHECK_CONCURRENCY: positiveInt(CHECK_CAPACITY.batchSize),
  /** Queued checks one workspace may run at once (docs/operations.md#capacity). */
  CHECK_WORKSPACE_SLOTS: positiveInt(CHECK_CAPACITY.workspaceSlots),
  /**
   * Seconds over which the nightly sweep spreads its checks (0: none; at most a day). Past SQS's
   * 900 s delay a check goes round the queue until its time (docs/operations.md#capacity).
   */
  SWEEP_SPREAD_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400)
    .default(CHECK_CAPACITY.spreadSeconds),
  /** Sources one workspace may index at once, and crawl pages it may read at once (its share). */
  INDEX_WORKSPACE_SLOTS: positiveInt(WORKER_SHARES.index.perWorkspace),
  CRAWL_WORKSPACE_SLOTS: positiveInt(WORKER_SHARES.crawl.perWorkspace),
  /** Requests per minute one workspace may make to the API (429 beyond). */
  RATE_LIMIT_PER_MINUTE: positiveInt(600),
  /** Daily quotas per workspace (UTC days); beyond them the work is a 429 naming the quota. */
  QUOTA_CRAWL_PAGES_PER_DAY: positiveInt(2_000),
  QUOTA_UPLOAD_BYTES_PER_DAY: positiveInt(1024 * 1024 * 1024),
  QUOTA_MODEL_CALLS_PER_DAY: positiveInt(2_000),
  QUOTA_COMPETITOR_CHECKS_PER_DAY: positiveInt(500),
  QUOTA_EXPORTS_PER_DAY: positiveInt(10),
  /** Reindexes of text and file sources (a URL source's reindex is a crawl page instead). */
  QUOTA_REINDEXES_PER_DAY: positiveInt(1_000),
  /**
   * How many records a workspace may hold at once; beyond, a create is a 409 `limit_reached`
   * (lib/limits/caps.ts, docs/decisions/0007-workspace-caps.md). Webhook endpoints stay at 20.
   */
  MAX_SOURCES_PER_WORKSPACE: positiveInt(10_000),
  MAX_COMPETITORS_PER_WORKSPACE: positiveInt(100),
  MAX_ARTIFACTS_PER_WORKSPACE: positiveInt(10_000),
  /** How long an export's download link works. */
  EXPORT_URL_TTL_SECONDS: z.coerce.number().int().positive().max(3600).default(600),
  /**
   * Bytes of an export bundle the worker writes as one part (S3 takes parts of 5 MiB and more, the
   * last one excepted), and the work one invocation does before it hands the rest to its next
   * message (docs/decisions/0006-workspace-export.md).
   */
  EXPORT_PART_BYTES: positiveInt(8 * 1024 * 1024),
  EXPORT_SLICE_SECONDS: z.coerce.number().int().min(0).default(600),
  /** Largest file accepted by the presigned upload, in bytes (multipart bodies take 4 MiB). */
  MAX_UPLOAD_BYTES: positiveInt(50 * 1024 * 1024),
  /** How long a presigned upload URL can be used. */
  UPLOAD_URL_TTL_SECONDS: positiveInt(900),
  /** Time after the URL expires for an upload started just before to arrive. */
  UPLOAD_GRACE_SECONDS: positiveInt(900),
  ...llmEnv.shape,
});

/** Every variable the service reads; the stack passes those set at synth on to the functions. */
export const CONFIG_KEYS = Object.keys(fields.shape) as Array<keyof typeof fields.shape>;

const schema = fields
  .refine((c) => c.CHUNK_OVERLAP < c.CHUNK_SIZE / 2, {
    message: "CHUNK_OVERLAP must be less than half of CHUNK_SIZE",
    path: ["CHUNK_OVERLAP"],
  })
  .refine((c) => !c.RERANK_MODEL || c.RERANK_BASE_URL || c.OPENAI_BASE_URL, {
    message: "RERANK_MODEL needs RERANK_BASE_URL (or OPENAI_BASE_URL): the server with /rerank",
    path: ["RERANK_BASE_URL"],
  });

export type Config = z.infer<typeof schema>;

/** Reads and validates the environment once; a bad deploy fails at cold start with a clear message. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid configuration: ${problems.join("; ")}`);
  }
  return parsed.data;
}

/** `CORS_ORIGINS` alone, for the function that reads no other setting (the API reference). */
export function loadCorsOrigins(env: NodeJS.ProcessEnv = process.env): CorsOrigins {
  const parsed = corsOrigins.safeParse(env.CORS_ORIGINS);
  if (!parsed.success) {
    throw new Error(`Invalid configuration: CORS_ORIGINS: ${parsed.error.issues[0]?.message}`);
  }
  return parsed.data;
}

/** The daily quotas of a configuration. */
export const quotaLimits = (config: Config) => ({
  crawl_pages: config.QUOTA_CRAWL_PAGES_PER_DAY,
  upload_bytes: config.QUOTA_UPLOAD_BYTES_PER_DAY,
  model_calls: config.QUOTA_MODEL_CALLS_PER_DAY,
  competitor_checks: config.QUOTA_COMPETITOR_CHECKS_PER_DAY,
  exports: config.QUOTA_EXPORTS_PER_DAY,
  reindexes: config.QUOTA_REINDEXES_PER_DAY,
});

/** The per-workspace caps of a configuration. */
export const capLimits = (config: Config): CapLimits => ({
  sources: config.MAX_SOURCES_PER_WORKSPACE,
  competitors: config.MAX_COMPETITORS_PER_WORKSPACE,
  artifacts: config.MAX_ARTIFACTS_PER_WORKSPACE,
  // Fixed: every event emitted reads all of a workspace's endpoints, an export reads them in one page.
  webhooks: DEFAULT_CAPS.webhooks,
});
