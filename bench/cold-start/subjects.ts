import { basename, join } from "node:path";
import {
  type ApiFunction,
  apiFunctions,
  type QueueName,
  type QueueWorker,
  queueWorkers,
  type ScheduledFunction,
  scheduledFunctions,
} from "../../functions/manifest.js";
import { bundleAll, bundleFunction } from "../../infra/aws/bundle.js";
import { newId } from "../../lib/ids.js";
import { Sources, sourceBlobPrefix } from "../../lib/knowledge/sources/sources.js";
import type { CheckMessage, CrawlMessage } from "../../lib/store/queue.js";
import { Corpus } from "../core/corpus.js";
import type { BenchContext, Workspace } from "../core/figure.js";
import { restEvent, scheduledEvent, sqsEvent } from "./events.js";
import { bundleWithoutSdk } from "./sdk-external.js";

/** The floor of figure 1, and the peer that adds the store clients to it. */
export const FLOOR = "hello (minimal Hono)";
const STORES_PEER = "hello + store clients";

/** One bundle to cold-start, and the event it answers first. */
export interface Subject {
  name: string;
  kind: string;
  bundle: string;
  bytes: number;
  /**
   * The first event, made anew for every cold start (a worker consumes its message); undefined
   * when there is none to send yet, and the process only loads the bundle.
   */
  event(): Promise<unknown>;
}

/** What one message of each queue says, produced by the service's own code for a fresh item. */
type MessageMaker = (ctx: BenchContext, workspace: Workspace) => Promise<string>;

const corpus = new Corpus(11);

/**
 * An S3 `ObjectCreated` notification as the bucket sends it to the uploads queue (the shape
 * `createdKeys` in lib/knowledge/uploads/events.ts reads), for the presigned-upload key of `id`.
 */
function uploadNotification(workspaceId: string, id: string): string {
  const key = `${sourceBlobPrefix(workspaceId, id)}upload`;
  return JSON.stringify({
    Records: [
      {
        eventVersion: "2.1",
        eventSource: "aws:s3",
        awsRegion: "us-east-1",
        eventTime: new Date().toISOString(),
        eventName: "ObjectCreated:Put",
        s3: {
          s3SchemaVersion: "1.0",
          bucket: { name: "kb-intel", arn: "arn:aws:s3:::kb-intel" },
          object: { key, size: 10_000, eTag: "0".repeat(32), sequencer: "0" },
        },
      },
    ],
  });
}

/**
 * A maker per queue. A worker whose queue has none yet is only loaded, not invoked, and its row
 * says so. Messages for a crawl, an upload or a competitor that does not exist are well formed
 * and take the worker's real path (parse, read the record, skip it as gone), which is what a
 * first event needs: the worker's modules and the SDK's first call, not a full crawl or check.
 */
const sampleMessages: Partial<Record<QueueName, MessageMaker>> = {
  /** A 10 KB text source, created by `Sources` but sent to a queue nobody consumes. */
  async index(ctx, workspace) {
    const parked = await ctx.parkedQueue("bench-cold-start-index");
    const sources = new Sources({ ...(await ctx.stores()), indexQueue: parked.queue });
    await sources.createText(workspace.workspaceId, corpus.document(10_000), "cold start");
    const message = parked.messages().at(-1);
    if (!message) throw new Error("creating a source queued no message");
    return message;
  },
  /** A page of a crawl that was never started: the crawler reads it, finds nothing, skips it. */
  async crawl(_ctx, workspace) {
    return JSON.stringify({
      kind: "crawl-page",
      workspaceId: workspace.workspaceId,
      crawlId: newId("crawl"),
      pageKey: "0".repeat(32),
    } satisfies CrawlMessage);
  },
  /** The notification of a presigned upload whose source record does not exist. */
  async uploads(_ctx, workspace) {
    return uploadNotification(workspace.workspaceId, newId("source"));
  },
  /** A queued check of a competitor that is not tracked: `runQueuedCheck` answers "gone". */
  async checks(_ctx, workspace) {
    return JSON.stringify({
      kind: "competitor-check",
      workspaceId: workspace.workspaceId,
      competitorId: newId("competitor"),
      requestedAt: new Date().toISOString(),
    } satisfies CheckMessage);
  },
};

/** An API function's first request: its first GET without path parameters, with a key on /api. */
function apiRequest(fn: ApiFunction, key: string) {
  const route = fn.routes.find((r) => r.method === "get" && !r.path.includes("{"));
  if (!route) return undefined;
  const headers: Record<string, string> = route.path.startsWith("/api/")
    ? { authorization: `Bearer ${key}` }
    : {};
  return { method: "GET", path: route.path, headers };
}

const LOAD_ONLY = "none: bundle loaded only";

/** Every function of the manifest, the floor and the peers, bundled into `dir`. */
export async function subjects(ctx: BenchContext, dir: string): Promise<Subject[]> {
  const bundles = await bundleAll(dir, false);
  const workspace = await ctx.workspace("cold start");
  const bundleOf = (name: string) => {
    const bundle = bundles.get(name);
    if (!bundle) throw new Error(`no bundle for ${name}`);
    return { bundle: join(bundle.dir, "index.mjs"), bytes: bundle.bytes };
  };
  const api = (fn: ApiFunction): Subject => {
    const request = apiRequest(fn, workspace.key);
    return {
      name: fn.name,
      kind: request ? `API: ${request.method} ${request.path}` : `${LOAD_ONLY} (no plain GET)`,
      ...bundleOf(fn.name),
      event: async () => request && restEvent(request),
    };
  };
  /**
   * The first API function that uses the stores (so loads the SDK), again with the SDK left to
   * the runtime, as deployed before it was bundled: one peer says what bundling the SDK changed;
   * the others would say the same.
   */
  const sdkPeer = async (): Promise<Subject[]> => {
    const fn = apiFunctions.find((f) => Object.keys(f.access).length > 0);
    if (!fn) return [];
    const built = await bundleWithoutSdk(fn, dir);
    return [{ ...api(fn), name: `${fn.name} (AWS SDK from the runtime)`, ...built }];
  };
  const worker = (fn: QueueWorker): Subject => {
    const message = sampleMessages[fn.queue];
    return {
      name: fn.name,
      kind: message ? `SQS: 1 ${fn.queue} message` : `${LOAD_ONLY} (no sample ${fn.queue} message)`,
      ...bundleOf(fn.name),
      event: async () => message && sqsEvent(fn.queue, [await message(ctx, workspace)]),
    };
  };
  const scheduled = (fn: ScheduledFunction): Subject => ({
    name: fn.name,
    kind: "EventBridge schedule",
    ...bundleOf(fn.name),
    event: async () => scheduledEvent(fn.name),
  });
  /** The floor and its peer are built like functions but answer `GET /hello`. */
  const hello = async (name: string, entry: string): Promise<Subject> => {
    const bundle = await bundleFunction({ name: basename(entry, ".ts"), entry }, dir);
    return {
      name,
      kind: "API: GET /hello",
      bundle: join(bundle.dir, "index.mjs"),
      bytes: bundle.bytes,
      event: async () => restEvent({ method: "GET", path: "/hello" }),
    };
  };
  return [
    await hello(FLOOR, "bench/cold-start/hello.ts"),
    await hello(STORES_PEER, "bench/cold-start/hello-stores.ts"),
    ...apiFunctions.map(api),
    ...(await sdkPeer()),
    ...queueWorkers.map(worker),
    ...scheduledFunctions.map(scheduled),
  ];
}
