import type { RouteConfig } from "@hono/zod-openapi";
import type { ScheduledHandler, SQSHandler } from "aws-lambda";
import { competitorRoutes } from "../lib/competitors/routes.js";
import { consoleRoutes } from "../lib/console/routes.js";
import type { ServiceApp } from "../lib/http/app.js";
import { VIEWER_FILE } from "../lib/http/docs.js";
import { getHealth } from "../lib/http/health.js";
import { artifactRoutes } from "../lib/intel/artifacts-routes.js";
import { generateRoutes } from "../lib/intel/generate-routes.js";
import { intelRoutes } from "../lib/intel/routes.js";
import { crawlRoutes } from "../lib/knowledge/crawl/routes.js";
import { knowledgeRoutes } from "../lib/knowledge/sources/routes.js";
import { uploadRoutes } from "../lib/knowledge/uploads/routes.js";
import { usageRoutes } from "../lib/limits/routes.js";
import { webhookRoutes } from "../lib/webhooks/routes.js";

/**
 * Every Lambda function of the service, in one list that both the CDK stack and the local
 * runtime read: the stack creates a function, its routes, queue and grants from each entry,
 * and the local runtime mounts the same modules and feeds the same workers.
 */

/** The SQS queues; each has a dead-letter queue and its URL in `{NAME}_QUEUE_URL`. */
/** `uploads` receives the bucket's ObjectCreated notifications for presigned uploads. */
/** `webhooks` carries one delivery attempt of a webhook event per message. */
export const QUEUES = ["index", "crawl", "uploads", "checks", "webhooks"] as const;
export type QueueName = (typeof QUEUES)[number];

export const queueUrlVariable = (queue: QueueName) => `${queue.toUpperCase()}_QUEUE_URL`;

/**
 * Parts of the bucket, each under its own key prefix: knowledge sources' content, chunks and
 * accepted files (`ws/{ws}/kb/`), presigned uploads not yet checked (`uploads/ws/{ws}/kb/`),
 * competitors' snapshots (`ws/{ws}/competitors/`), the search index (`search/`).
 */
export type BucketArea = "sources" | "uploads" | "competitors" | "search";
/** What code does to objects: read them (`readVersions`: a version by id), write, delete them. */
export type ObjectAction = "read" | "readVersions" | "write" | "delete";

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
}

export interface ApiFunction {
  name: string;
  /** Path of the entry file, relative to the repository root. */
  entry: string;
  routes: RouteConfig[];
  access: Access;
  /** Search keeps per-workspace indexes in memory, so the functions that search get more. */
  memoryMb?: number;
  /** Packages installed beside the bundle instead of bundled (native ones, like the search engine). */
  nodeModules?: string[];
  load(): Promise<{ app: ServiceApp }>;
}

export interface QueueWorker {
  name: string;
  entry: string;
  queue: QueueName;
  batchSize: number;
  /** Concurrent executions the event source may drive (bounds load on sites and stores). */
  maxConcurrency: number;
  timeoutSeconds: number;
  memoryMb: number;
  access: Access;
  /** Packages installed beside the bundle instead of bundled (ones that read files at run time). */
  nodeModules?: string[];
  load(): Promise<{ handler: SQSHandler }>;
}

/**
 * The search engine (LanceDB) is a native module of about 160 MB: installed beside the bundles of
 * the functions that search or write the index, for the functions' architecture, never bundled.
 */
const SEARCH_ENGINE = ["@lancedb/lancedb", "apache-arrow"];

export const apiFunctions: ApiFunction[] = [
  {
    name: "knowledge-api",
    entry: "functions/knowledge-api.ts",
    routes: [...knowledgeRoutes, ...crawlRoutes, ...uploadRoutes],
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
    routes: [...intelRoutes, ...generateRoutes, ...artifactRoutes, ...usageRoutes],
    // The competitor module reads a tracked competitor's latest snapshot.
    access: {
      table: "readWrite",
      bucket: { search: ["read"], competitors: ["read"] },
      model: true,
    },
    memoryMb: 1024,
    nodeModules: SEARCH_ENGINE,
    load: () => import("./intel-api.js"),
  },
  {
    name: "competitors-api",
    entry: "functions/competitors-api.ts",
    routes: competitorRoutes,
    access: {
      table: "readWrite",
      bucket: { competitors: ["read", "write", "delete"] },
      sends: ["checks", "webhooks"],
      model: true,
    },
    load: () => import("./competitors-api.js"),
  },
  {
    name: "webhooks-api",
    entry: "functions/webhooks-api.ts",
    routes: webhookRoutes,
    access: { table: "readWrite", sends: ["webhooks"] },
    load: () => import("./webhooks-api.js"),
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
    routes: consoleRoutes,
    access: {},
    load: () => import("./console-web.js"),
  },
];

export const queueWorkers: QueueWorker[] = [
  {
    name: "index-worker",
    entry: "functions/index-worker.ts",
    queue: "index",
    batchSize: 5,
    maxConcurrency: 10,
    timeoutSeconds: 120,
    memoryMb: 1024,
    access: {
      table: "readWrite",
      bucket: {
        sources: ["read", "readVersions", "write", "delete"],
        search: ["read", "write", "delete"],
      },
      sends: ["webhooks"],
      model: true,
    },
    nodeModules: ["jsdom", ...SEARCH_ENGINE],
    load: () => import("./index-worker.js"),
  },
  {
    name: "crawl-worker",
    entry: "functions/crawl-worker.ts",
    queue: "crawl",
    batchSize: 5,
    maxConcurrency: 5,
    timeoutSeconds: 60,
    memoryMb: 1024,
    access: {
      table: "readWrite",
      bucket: { sources: ["write"] },
      sends: ["index", "crawl", "webhooks"],
    },
    nodeModules: ["jsdom"],
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
    batchSize: 4,
    // Each check already spreads its requests over one site; a few at once is plenty.
    maxConcurrency: 2,
    timeoutSeconds: 180,
    memoryMb: 512,
    access: {
      table: "readWrite",
      bucket: { competitors: ["read", "write", "delete"] },
      sends: ["webhooks"],
      model: true,
    },
    load: () => import("./competitor-check-worker.js"),
  },
  {
    name: "webhooks-worker",
    entry: "functions/webhooks-worker.ts",
    queue: "webhooks",
    batchSize: 10,
    // Each delivery waits at most 10 s on its endpoint; ten at a time fit the timeout.
    maxConcurrency: 5,
    timeoutSeconds: 30,
    memoryMb: 256,
    access: { table: "readWrite", sends: ["webhooks"] },
    load: () => import("./webhooks-worker.js"),
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
    // Nightly at 03:00 UTC.
    cron: "0 3 * * *",
    cronVariable: "SWEEP_CRON",
    timeoutSeconds: 300,
    access: { table: "read", sends: ["checks"] },
    load: () => import("./competitor-sweep.js"),
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
