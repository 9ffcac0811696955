import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Context, ScheduledEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Emulator, ensureTable, startDynamo, startS3 } from "../../infra/local/emulators.js";
import { LocalQueues, type SqsHandler } from "../../infra/local/queues.js";
import { Competitors } from "../../lib/competitors/competitors.js";
import { Events } from "../../lib/competitors/events.js";
import { Snapshots } from "../../lib/competitors/snapshot.js";
import { loadConfig } from "../../lib/config.js";
import { createStores } from "../../lib/store/clients.js";
import { type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";
import { closedPort } from "./world.js";

const scheduledEvent: ScheduledEvent = {
  version: "0",
  id: "sweep-1",
  "detail-type": "Scheduled Event",
  source: "aws.events",
  account: "000000000000",
  time: new Date().toISOString(),
  region: "us-east-1",
  resources: ["arn:aws:events:us-east-1:000000000000:rule/competitor-sweep"],
  detail: {},
};

/**
 * The nightly path end to end, with the real function handlers: the sweep reads the competitor
 * index and queues checks on the local SQS endpoint; the checks worker consumes them.
 */
describe("the competitor sweep and the checks worker", () => {
  let dynamo: Emulator;
  let s3: Emulator;
  let queues: LocalQueues;
  let site: CompetitorSite;
  let sweep: (event: ScheduledEvent) => Promise<void>;
  let worker: SqsHandler;
  let competitors: Competitors;
  let events: Events;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    [dynamo, s3, site] = await Promise.all([
      startDynamo(),
      startS3(undefined, ["sweep-bucket"]),
      startCompetitorSite(),
    ]);
    // The board's API is not reachable from tests: this site lists its jobs itself.
    site.state.jobBoard = "html";
    queues = new LocalQueues({ maxReceiveCount: 2, retryDelayMs: 10 });
    const sqs = await queues.start();
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ENDPOINT_URL_SQS: sqs,
      TABLE_NAME: "sweep-table",
      BUCKET_NAME: "sweep-bucket",
      S3_FORCE_PATH_STYLE: "true",
      CHECKS_QUEUE_URL: queues.create("checks"),
      INDEX_QUEUE_URL: queues.create("index"),
      CRAWL_QUEUE_URL: queues.create("crawl"),
      WEBHOOKS_QUEUE_URL: queues.create("webhooks"),
      ALLOW_PRIVATE_URLS: "true",
      CHECK_POLITENESS_MS: "0",
      CHECK_CONCURRENCY: "2",
      // The nightly spread would delay the checks by up to 15 minutes: capacity.test.ts covers it.
      SWEEP_SPREAD_SECONDS: "0",
    });
    await ensureTable(new DynamoDBClient({}), "sweep-table");
    const stores = createStores(loadConfig());
    competitors = new Competitors({ table: stores.table, snapshots: new Snapshots(stores.blobs) });
    events = new Events(stores.table);
    const [sweepModule, workerModule] = await Promise.all([
      import("../../functions/competitor-sweep.js"),
      import("../../functions/competitor-check-worker.js"),
    ]);
    const context = {} as Context;
    sweep = async (event) => void (await sweepModule.handler(event, context, () => undefined));
    worker = async (event, ctx) =>
      (await workerModule.handler(event, ctx, () => undefined)) ?? undefined;

    // Hourly, so each is due whatever the hour the test runs in: cadence.test.ts covers the rest.
    ids.first = (await competitors.create("ws_one", site.origin, "hourly")).id;
    ids.second = (await competitors.create("ws_two", site.origin, "hourly")).id;
    const down = `http://127.0.0.1:${await closedPort()}/`;
    ids.down = (await competitors.create("ws_two", down, "hourly")).id;
  });

  afterAll(async () => {
    await queues.close();
    await Promise.all([dynamo.close(), s3.close(), site.close()]);
  });

  it("queues one check per competitor of every workspace", async () => {
    await sweep(scheduledEvent);
    const messages = queues.pending("checks").map((body) => JSON.parse(body) as unknown);
    expect(messages).toHaveLength(3);
    const requestedAt = expect.any(String);
    const message = (workspaceId: string, competitorId?: string) => ({
      kind: "competitor-check",
      workspaceId,
      competitorId,
      requestedAt,
    });
    expect(messages).toEqual(
      expect.arrayContaining([
        message("ws_one", ids.first),
        message("ws_two", ids.second),
        message("ws_two", ids.down),
      ]),
    );
  });

  it("runs the queued checks: baselines for reachable sites, nothing retried for a site that is down", async () => {
    queues.consume("checks", worker, { batchSize: 10 });
    await queues.idle();
    expect(queues.deadLetters("checks")).toEqual([]);
    expect((await competitors.get("ws_one", ids.first ?? "")).lastAnalyzedAt).not.toBeNull();
    expect((await competitors.get("ws_two", ids.second ?? "")).lastAnalyzedAt).not.toBeNull();
    const down = await competitors.get("ws_two", ids.down ?? "");
    expect(down.lastAnalyzedAt).toBeNull();
    expect(down.lastCheckedAt).not.toBeNull();
  });

  it("records each workspace's events on the next sweep after a change", async () => {
    site.state.jobs.push({ id: 301, title: "Data Engineer", team: "Data", location: "Paris" });
    await sweep(scheduledEvent);
    await queues.idle();
    for (const [workspace, id] of [
      ["ws_one", ids.first],
      ["ws_two", ids.second],
    ] as const) {
      const { items } = await events.list(workspace, {}, 10);
      expect(items).toMatchObject([
        {
          competitorId: id,
          type: "hiring",
          severity: "medium",
          details: {
            change: "new_department",
            subject: "Data",
            after: [{ title: "Data Engineer", location: "Paris" }],
          },
        },
        {
          competitorId: id,
          severity: "medium",
          change: { kind: "new_location", subject: "Paris" },
        },
      ]);
    }
  });

  it("does nothing more for a message delivered twice, and dead-letters a malformed one", async () => {
    const requestedAt = new Date(Date.now() - 60_000).toISOString();
    const late = JSON.stringify({
      kind: "competitor-check",
      workspaceId: "ws_one",
      competitorId: ids.first,
      requestedAt,
    });
    const before = site.requests.length;
    queues.send("checks", late);
    queues.send("checks", late);
    queues.send("checks", "not json");
    await queues.idle();
    expect(site.requests.length).toBe(before);
    expect(queues.deadLetters("checks").map((m) => m.body)).toEqual(["not json"]);
  });
});
