import type { RouteConfig } from "@hono/zod-openapi";
import type { ScheduledHandler, SQSHandler } from "aws-lambda";
import { CHECK_CAPACITY } from "../lib/competitors/capacity.js";
import { competitorsContract } from "../lib/competitors/contract.js";
import { consoleContract } from "../lib/console/contract.js";
import type { ServiceApp } from "../lib/http/app.js";
import { VIEWER_FILE } from "../lib/http/docs.js";
import { getHealth } from "../lib/http/health.js";
import { artifactsContract } from "../lib/intel/artifacts/contract.js";
import { battlecardContract } from "../lib/intel/battlecard/contract.js";
import { brandContract } from "../lib/intel/brand/contract.js";
import { chatContract } from "../lib/intel/chat/contract.js";
import { generateContract } from "../lib/intel/generate/contract.js";
import { crawlContract } from "../lib/knowledge/crawl/contract.js";
import { sourcesContract } from "../lib/knowledge/sources/contract.js";
import { uploadsContract } from "../lib/knowledge/uploads/contract.js";
import { usageContract } from "../lib/limits/contract.js";
import { WORKER_SHARES } from "../lib/limits/worker-shares.js";
import { WEBHOOK_CAPACITY } from "../lib/webhooks/capacity.js";
import { webhooksContract } from "../lib/webhooks/contract.js";
import { exportContract } from "../lib/workspaces/export/contract.js";
import { EXPORT_WORKER_TIMEOUT_SECONDS } from "../lib/workspaces/export/exports.js";

/**
 * Every Lambda function of the service, in one list that both the CDK stack and the local
 * runtime read: the stack creates a function, its routes, queue and grants from each entry,
 * and the local runtime mounts the same modules and feeds the same workers.
 */

/** The SQS queues; each has a dead-letter queue and its URL in `{NAME}_QUEUE_URL`. */
/** `uploads` receives the bucket's ObjectCreated notifications for presigned uploads. */
/** `webhooks` carries one delivery attempt of a webhook event per message. */
/** `exports` carries one slice of writing a workspace export's bundle per message. */
export const QUEUES = ["index", "crawl", "uploads", "checks", "webhooks", "exports"] as const;
export type QueueName = (typeof QUEUES)[number];

export const queueUrlVariable = (queue: QueueName) => `${queue.toUpperCase()}_QUEUE_URL`;

/**
 * Parts of the bucket, each under its own key prefix: knowledge sources' content, chunks and
 * accepted files (`ws/{ws}/kb/`), presigned uploads not yet checked (`uploads/ws/{ws}/kb/`),
 * competitors' snapshots (`ws/{ws}/competitors/`), the search index (`search/`), workspace export
 * bundles (`exports/ws/{ws}/`).
 */
export type BucketArea = "sources" | "uploads" | "competitors" | "search" | "exports";
/**
 * What code does to objects: read them (`readVersions`: a version by id), write, delete them;
 * `tag`: write them with S3 tags, which lifecycle rules expire them by (competitors' screenshots).
 */
export type ObjectAction = "read" | "readVersions" | "write" | "tag" | "delete";

/**
 * What a function's code does, and nothing more: the stack turns it into its IAM policy, action
 * by action (`test/infra/aws/stack.test.ts` holds the list per function).
 */
export interface Access {
  table?: "read" | "readWrite";
  bucket?: Partial<Record<BucketArea, ObjectAction[]>>;
  sends?: QueueName[];
  /** Calls the model: may read the provider's key from its Secrets Manager secret at run time. */
  model?: boolean;
  /**
   * Seals secrets under the service's KMS key (`encrypt`: kms:GenerateDataKey, a data key per
   * secret) or opens them (`decrypt`: kms:Decrypt); lib/store/keys.ts.
   */
  keys?: "encrypt" | "decrypt";
  /** Sends email through Amazon SES (ses:SendEmail), as the sender MAIL_FROM only. */
  mail?: boolean;
}

export interface ApiFunction {
  name: string;
  /** Path of the entry file, relative to the repository root. */
  entry: string;
  routes: RouteConfig[];
  access: Access;
  /**
   * Memory in MB. The functions that search hold the engine, open tables and small tables'
   * full-text indexes (docs/search.md); what a searching process holds: bench/report.md, figure 14.
   */
  memoryMb?: number;
  /** Packages installed beside the bundle instead of bundled (native ones, like the search engine). */
  nodeModules?: string[];
  load(): Promise<{ app: ServiceApp }>;
}

/**
 * A worker that sends messages to the very queue it consumes, on purpose, so that one piece of
 * work is a chain of invocations longer than Lambda's recursive loop detection allows (it stops
 * the chain after about 16 hops of one function through SQS, SNS, S3 or Lambda, and drops the
 * message). Declaring it is what lets the loop run: on AWS the function gets
 * `recursiveLoop: Allow` (every other function keeps `Terminate`), and the local runtime models the
 * same guard from this field. `bound` is what stops the loop instead, since Lambda no longer does.
 */
export interface Recursion {
  allow: true;
  /** Why the worker sends its own queue messages. */
  why: string;
  /** What ends every such chain: the limit that replaces Lambda's 16 hops. */
  bound: string;
}

export interface QueueWorker {
  name: string;
  entry: string;
  queue: QueueName;
  /** Set when the worker sends to its own `queue`: see `Recursion`. Absent, a loop is stopped. */
  recursion?: Recursion;
  batchSize: number;
  /** Concurrent executions the event source may drive (bounds load on sites and stores). */
  maxConcurrency: number;
  /**
   * Messages of one workspace the worker runs at once by default (its fair share, kept by slot
   * items; docs/operations.md#capacity); absent, the worker keeps no share.
   */
  workspaceSlots?: number;
  timeoutSeconds: number;
  memoryMb: number;
  access: Access;
  /** Packages installed beside the bundle instead of bundled (ones that read files at run time). */
  nodeModules?: string[];
  load(): Promise<{ handler: SQSHandler }>;
}

/**
 * The search engine (LanceDB) is a native module: installed beside the bundles of the functions
 * that search or write the index, for the functions' architecture, never bundled. What it adds to
 * each function: docs/decisions/0001-search-engine.md (a stack test keeps all under 250 MB).
 */
const SEARCH_ENGINE = ["@lancedb/lancedb", "apache-arrow"];

/**
 * Lambda's SDK client, with which the functions that read pages invoke the render function
 * (`invokedFunctions`): installed beside their bundles and imported at the first page that needs
 * a browser (lib/web/render/remote.ts), so their bundles and cold starts do not carry it.
 */
const RENDER_CLIENT = ["@aws-sdk/client-lambda"];

export const apiFunctions: ApiFunction[] = [
  {
    name: "knowledge-api",
    entry: "functions/knowledge-api.ts",
    routes: [...sourcesContract, ...crawlContract, ...uploadsContract],
    access: {
      table: "readWrite",
      bucket: { sources: ["write", "delete"], uploads: ["write"], search: ["read"] },
      sends: ["index", "crawl", "webhooks"],
      model: true,
    },
    memoryMb: 1024,
    nodeModules: SEARCH_ENGINE,
    load: () => import("./knowledge-api.js"),
  },
  {
    name: "intel-api",
    entry: "functions/intel-api.ts",
    routes: [
      ...brandContract,
      ...chatContract,
      ...generateContract,
      ...artifactsContract,
      ...battlecardContract,
      ...usageContract,
    ],
    // The competitor module and the battlecard read a tracked competitor's latest snapshot.
    access: {
      table: "readWrite",
      bucket: { search: ["read"], competitors: ["read"] },
      model: true,
    },
    memoryMb: 1024,
    // `docx` writes an artifact's and a battlecard's DOCX export: bundled, it would add 296 KiB
    // (1,527 KiB, over the budget) parsed at every cold start for a rare request, so it is
    // installed beside the bundle and imported when a DOCX is asked for.
    nodeModules: [...SEARCH_ENGINE, "docx"],
    load: () => import("./intel-api.js"),
  },
  {
    name: "competitors-api",
    entry: "functions/competitors-api.ts",
    routes: competitorsContract,
    access: {
      table: "readWrite",
      bucket: { competitors: ["read", "write", "tag", "delete"] },
      sends: ["checks", "webhooks"],
      model: true,
    },
    nodeModules: RENDER_CLIENT,
    load: () => import("./competitors-api.js"),
  },
  {
    name: "webhooks-api",
    entry: "functions/webhooks-api.ts",
    routes: webhooksContract,
    // Seals each new endpoint's signing secret; never opens one.
    access: { table: "readWrite", sends: ["webhooks"], keys: "encrypt" },
    load: () => import("./webhooks-api.js"),
  },
  {
    name: "exports-api",
    entry: "functions/exports-api.ts",
    routes: exportContract,
    // Reading a bundle is what a presigned download URL is signed for.
    access: { table: "readWrite", bucket: { exports: ["read"] }, sends: ["exports"] },
    load: () => import("./exports-api.js"),
  },
  {
    name: "docs-api",
    entry: "functions/docs-api.ts",
    routes: [
      getHealth,
      { method: "get", path: "/openapi.json", responses: {} },
      { method: "get", path: "/docs", responses: {} },
      { method: "get", path: `/docs/${VIEWER_FILE}`, responses: {} },
    ],
    access: {},
    load: () => import("./docs-api.js"),
  },
  {
    name: "console-web",
    entry: "functions/console-web.ts",
    routes: consoleContract,
    access: {},
    load: () => import("./console-web.js"),
  },
];

export const queueWorkers: QueueWorker[] = [
  {
    name: "index-worker",
    entry: "functions/index-worker.ts",
    queue: "index",
    // From lib/limits/worker-shares.ts, as each workspace's share of it.
    batchSize: WORKER_SHARES.index.batchSize,
    maxConcurrency: WORKER_SHARES.index.maxConcurrency,
    workspaceSlots: WORKER_SHARES.index.perWorkspace,
    timeoutSeconds: WORKER_SHARES.index.timeoutSeconds,
    memoryMb: 1024,
    access: {
      table: "readWrite",
      bucket: {
        sources: ["read", "readVersions", "write", "delete"],
        search: ["read", "write", "delete"],
      },
      sends: ["index", "webhooks"],
      model: true,
    },
    recursion: {
      allow: true,
      why:
        "A source whose workspace already indexes as many sources as its share allows is sent " +
        "back to the index queue with a growing delay instead of indexed, so one workspace's " +
        "bulk import cannot hold the worker.",
      bound:
        "The workspace's own earlier sources: a message is put back only while they hold its " +
        "slots, each ends within the worker's timeout (a crashed one's lease too), and the " +
        "watchdog fails a source still queued after QUEUE_RETENTION_DAYS.",
    },
    nodeModules: ["jsdom", ...SEARCH_ENGINE, ...RENDER_CLIENT],
    load: () => import("./index-worker.js"),
  },
  {
    name: "crawl-worker",
    entry: "functions/crawl-worker.ts",
    queue: "crawl",
    batchSize: WORKER_SHARES.crawl.batchSize,
    maxConcurrency: WORKER_SHARES.crawl.maxConcurrency,
    workspaceSlots: WORKER_SHARES.crawl.perWorkspace,
    timeoutSeconds: WORKER_SHARES.crawl.timeoutSeconds,
    memoryMb: 1024,
    access: {
      table: "readWrite",
      bucket: { sources: ["write"] },
      sends: ["index", "crawl", "webhooks"],
    },
    recursion: {
      allow: true,
      why:
        "A crawl is a chain of its own messages: each page queues the pages it links to, a page " +
        "that must wait for its host's pace or retry a failure, or whose workspace holds all its " +
        "crawl slots, is sent back with a delay, and " +
        "the crawl's watch message comes back every CRAWL_WATCH_SECONDS until the crawl ends.",
      bound:
        "The crawl's maxPages (and the workspace's QUOTA_CRAWL_PAGES_PER_DAY), 3 retries per " +
        "page, pages recorded once per crawl, a page put back for its workspace's slots only " +
        "while the workspace's earlier pages hold them; the watch stops when the crawl " +
        "completes, is cancelled or is failed after CRAWL_STALL_SECONDS without progress.",
    },
    nodeModules: ["jsdom", ...RENDER_CLIENT],
    load: () => import("./crawl-worker.js"),
  },
  {
    name: "upload-events-worker",
    entry: "functions/upload-events-worker.ts",
    queue: "uploads",
    batchSize: 10,
    maxConcurrency: 5,
    timeoutSeconds: 30,
    memoryMb: 256,
    access: {
      table: "readWrite",
      bucket: { sources: ["read", "write", "delete"], uploads: ["read", "delete"] },
      sends: ["index", "webhooks"],
    },
    load: () => import("./upload-events-worker.js"),
  },
  {
    name: "competitor-check-worker",
    entry: "functions/competitor-check-worker.ts",
    queue: "checks",
    // From the capacity model (lib/competitors/capacity.ts, docs/operations.md#capacity): the
    // nightly sweep's checks within its window, no record of a batch waiting for another.
    batchSize: CHECK_CAPACITY.batchSize,
    maxConcurrency: CHECK_CAPACITY.maxConcurrency,
    workspaceSlots: CHECK_CAPACITY.workspaceSlots,
    // Far above a check's bound (its budget, briefs and storage: about a minute).
    timeoutSeconds: 180,
    memoryMb: 512,
    access: {
      table: "readWrite",
      bucket: { competitors: ["read", "write", "tag", "delete"] },
      sends: ["checks", "webhooks"],
      model: true,
    },
    recursion: {
      allow: true,
      why:
        "A check whose workspace already runs all its check slots is sent back to the checks " +
        "queue with a growing delay instead of run, so one workspace cannot hold the worker; a " +
        "sweep's check due later than SQS's 900 s delay goes round the queue until its time.",
      bound:
        "The capacity model's maxDeferrals per message (waits long enough for a workspace's " +
        "longest list to pass its slots), after which the check is given up until the next " +
        "sweep; a check due later goes round at most spreadSeconds / 900 times; a check never " +
        "queues another.",
    },
    nodeModules: RENDER_CLIENT,
    load: () => import("./competitor-check-worker.js"),
  },
  {
    name: "webhooks-worker",
    entry: "functions/webhooks-worker.ts",
    queue: "webhooks",
    // From the capacity model (lib/webhooks/capacity.ts, docs/webhooks.md#fairness): a batch's
    // records run at once, each waiting on its own endpoint; a workspace holds its share of the
    // invocations, an endpoint one attempt.
    batchSize: WEBHOOK_CAPACITY.batchSize,
    maxConcurrency: WEBHOOK_CAPACITY.maxConcurrency,
    // Leaves a first attempt its whole lease (its timeout and margin, 20 s) with time to spare.
    timeoutSeconds: 30,
    memoryMb: 256,
    // Opens an endpoint's signing secret to sign each delivery (and an email endpoint's
    // recipients to send its digest through SES).
    access: { table: "readWrite", sends: ["webhooks"], keys: "decrypt", mail: true },
    recursion: {
      allow: true,
      why:
        "A failed delivery queues its next attempt after its backoff; waits longer than SQS's " +
        "15-minute delay go round the queue again every 15 minutes until their time comes. A " +
        "delivery whose endpoint is busy or whose circuit is open is sent back, not attempted.",
      bound:
        "The attempts of WEBHOOK_RETRY_SECONDS (by default 8 over about a day), each deferred " +
        "at most the capacity model's maxDeferrals times; the last failure (or deferral past " +
        "that) throws, and the queue dead-letters the message after its receives.",
    },
    load: () => import("./webhooks-worker.js"),
  },
  {
    name: "export-worker",
    entry: "functions/export-worker.ts",
    queue: "exports",
    batchSize: 1,
    maxConcurrency: 2,
    timeoutSeconds: EXPORT_WORKER_TIMEOUT_SECONDS,
    memoryMb: 512,
    access: {
      table: "readWrite",
      bucket: { sources: ["read"], competitors: ["read"], exports: ["write"] },
      sends: ["exports"],
    },
    recursion: {
      allow: true,
      why:
        "An export's bundle is written one time slice (EXPORT_SLICE_SECONDS) per message, so a " +
        "workspace of any size fits: a slice that does not finish sends the same message again " +
        "to carry on from the export's checkpoint.",
      bound:
        "The workspace's records: every message writes at least one part of EXPORT_PART_BYTES " +
        "and moves the checkpoint forward (a duplicate finding the job held comes back once its " +
        "holder's lease ends), and the chain ends when the bundle is complete or the export " +
        "fails on its message's last delivery.",
    },
    load: () => import("./export-worker.js"),
  },
];

/**
 * A function the others invoke directly (Lambda Invoke, synchronously), not through a route, a
 * queue or a schedule. Each function of `invokedBy` is told its name in `nameVariable` and is
 * allowed lambda:InvokeFunction on it, and nothing else is.
 */
export interface InvokedFunction {
  name: string;
  entry: string;
  /** The functions that call it, by name. */
  invokedBy: string[];
  nameVariable: string;
  /** `x86_64` where a package it runs ships for that architecture only; arm64 otherwise. */
  architecture?: "arm64" | "x86_64";
  timeoutSeconds: number;
  memoryMb: number;
  access: Access;
  nodeModules?: string[];
}

/**
 * Rendering pages that need scripts (docs/decisions/0012-rendering-pages.md): the one function
 * with a browser, so no other function's bundle or cold start carries one. @sparticuz/chromium
 * ships its Chromium for x86_64 only in its npm package, so the function runs on x86_64; it
 * reaches the web only through the safe fetcher and needs no table, bucket or queue.
 */
export const invokedFunctions: InvokedFunction[] = [
  {
    name: "render",
    entry: "functions/render.ts",
    invokedBy: ["competitors-api", "competitor-check-worker", "crawl-worker", "index-worker"],
    nameVariable: "RENDER_FUNCTION_NAME",
    architecture: "x86_64",
    // A page's render is bounded at 20 s (DEFAULT_RENDER_LIMITS); a cold start unpacks Chromium.
    timeoutSeconds: 40,
    // Chromium's renderer and a page's script heap (256 MB) with room to spare.
    memoryMb: 2048,
    access: {},
    nodeModules: ["@sparticuz/chromium", "playwright-core"],
  },
];

export interface ScheduledFunction {
  name: string;
  entry: string;
  /** When it runs: a five-field cron expression in UTC (minute hour day month weekday). */
  cron: string;
  /** Environment variable that overrides `cron` (read by the local runtime and at synth). */
  cronVariable: string;
  timeoutSeconds: number;
  access: Access;
  load(): Promise<{ handler: ScheduledHandler }>;
}

export const scheduledFunctions: ScheduledFunction[] = [
  {
    name: "watchdog",
    entry: "functions/watchdog.ts",
    cron: "*/10 * * * *",
    cronVariable: "WATCHDOG_CRON",
    timeoutSeconds: 120,
    access: {
      table: "readWrite",
      bucket: { sources: ["read", "write", "delete"], uploads: ["read", "delete"] },
      sends: ["index", "webhooks"],
    },
    load: () => import("./watchdog.js"),
  },
  {
    name: "competitor-sweep",
    entry: "functions/competitor-sweep.ts",
    // Hourly: each competitor is due every hour, at its hour of the day or of the week (cadence).
    cron: "0 * * * *",
    cronVariable: "SWEEP_CRON",
    timeoutSeconds: 300,
    access: { table: "read", sends: ["checks"] },
    load: () => import("./competitor-sweep.js"),
  },
  {
    name: "competitor-digest",
    entry: "functions/competitor-digest.ts",
    // Hourly: each email endpoint is due at DIGEST_HOUR (UTC), daily or on Mondays (digest.ts).
    cron: "30 * * * *",
    cronVariable: "DIGEST_CRON",
    timeoutSeconds: 120,
    access: { table: "read", sends: ["webhooks"] },
    load: () => import("./competitor-digest.js"),
  },
  {
    name: "refresh",
    entry: "functions/refresh.ts",
    // Hourly: each scheduled source or crawl has one hour of the day (daily) or week (weekly).
    cron: "15 * * * *",
    cronVariable: "REFRESH_CRON",
    timeoutSeconds: 300,
    access: { table: "readWrite", sends: ["index", "crawl"] },
    load: () => import("./refresh.js"),
  },
];

/** The cron expression a scheduled function runs on, after its override variable. */
export const cronOf = (fn: ScheduledFunction, env: NodeJS.ProcessEnv = process.env) =>
  env[fn.cronVariable] ?? fn.cron;
