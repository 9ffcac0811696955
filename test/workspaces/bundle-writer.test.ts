import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyStore } from "../../lib/auth/keys.js";
import { Events } from "../../lib/competitors/events.js";
import { BrandProfiles } from "../../lib/intel/brand/profiles.js";
import type { Blobs } from "../../lib/store/blobs.js";
import type { ExportMessage, Queue } from "../../lib/store/queue.js";
import { WebhookEndpoints } from "../../lib/webhooks/endpoints.js";
import { type BundleDeps, bundleLines } from "../../lib/workspaces/export/bundle.js";
import { type BundleWriterDeps, writeBundle } from "../../lib/workspaces/export/bundle-writer.js";
import { ExportJobs } from "../../lib/workspaces/export/exports.js";
import { startAws, type TestAws } from "../support/aws.js";

/**
 * The export worker on the emulated stores: a bundle is written in parts with a checkpoint after
 * each, so a delivery that dies part-way is carried on by the next from its last checkpoint
 * (never from the start, never skipping), a slice that runs out of time hands on to a message of
 * its own, a duplicate delivery writes nothing, and the last delivery's failure fails the export.
 */

const PART_BYTES = 1024;
const EVENTS = 30;

let aws: TestAws;
let workspaceId: string;
let bundle: BundleDeps;
let jobs: ExportJobs;

/** A delivery of a message: the first, or the last before the dead-letter queue. */
const first = { receiveCount: 1, maxReceiveCount: 5 };
const last = { receiveCount: 5, maxReceiveCount: 5 };

/** The bucket, with its part writes counted and failing from the `failFrom`-th on. */
function countedBlobs(failFrom = Number.POSITIVE_INFINITY) {
  const parts: number[] = [];
  const blobs = Object.create(aws.blobs) as Blobs;
  blobs.uploadPart = async (key, uploadId, partNumber, body) => {
    if (parts.length + 1 >= failFrom) throw new Error("the worker died");
    parts.push(partNumber);
    return aws.blobs.uploadPart(key, uploadId, partNumber, body);
  };
  return { blobs, parts };
}

/** A queue that keeps what is sent to it, and with which delay. */
function keptQueue() {
  const sent: ExportMessage[] = [];
  const delays: number[] = [];
  const queue = {
    send: async (message: ExportMessage, delaySeconds = 0) => {
      sent.push(message);
      delays.push(delaySeconds);
    },
  };
  return { queue: queue as unknown as Queue<ExportMessage>, sent, delays };
}

function writer(blobs: Blobs, overrides: Partial<BundleWriterDeps["settings"]> = {}) {
  const { queue, sent, delays } = keptQueue();
  const deps: BundleWriterDeps = {
    jobs,
    blobs,
    bundle,
    queue,
    settings: { partBytes: PART_BYTES, sliceMs: 60_000, leaseMs: 60_000, ...overrides },
  };
  return { deps, sent, delays };
}

/** The records of a bundle, without the lines that carry times. */
async function recordsOf(key: string): Promise<string[]> {
  const text = (await aws.blobs.getText(key)) ?? "";
  expect(text.endsWith("\n")).toBe(true);
  const lines = text.trimEnd().split("\n");
  expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ kind: "export" });
  expect(JSON.parse(lines.at(-1) ?? "{}")).toMatchObject({ kind: "end" });
  return lines.slice(1, -1);
}

/** What a straight read of the workspace gives, line by line. */
async function straightRead(): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of bundleLines(bundle, workspaceId)) lines.push(line.text);
  return lines;
}

beforeAll(async () => {
  aws = await startAws();
  const keys = new KeyStore(aws.table, 0);
  workspaceId = (await keys.createWorkspace("Acme")).id;
  bundle = {
    table: aws.table,
    blobs: aws.blobs,
    keys,
    brands: new BrandProfiles(aws.table),
    endpoints: new WebhookEndpoints(aws.table),
  };
  jobs = new ExportJobs(aws.table);
  await new BrandProfiles(aws.table).put(workspaceId, {
    name: "Acme",
    description: "Analytics for teams",
  });
  const drafts = Array.from({ length: EVENTS }, (_, i) => ({
    competitorId: "comp_01J0000000000000000000ZZZZ",
    competitorDomain: "rival.example",
    type: "pricing" as const,
    severity: "medium" as const,
    title: `Plan ${i} went from $${i} to $${i + 1}`,
    aiBrief: "A price rise, as prices go: ".repeat(4),
    details: {
      change: "price_increased" as const,
      subject: `Plan ${i}`,
      before: i,
      after: i + 1,
      url: null,
    },
  }));
  await new Events(aws.table).record(workspaceId, drafts, new Date().toISOString());
});

afterAll(() => aws.close());

describe("the export worker", () => {
  it("carries a delivery that died part-way on from its last checkpoint", async () => {
    const job = await jobs.create(workspaceId);
    const message = { kind: "export" as const, workspaceId, exportId: job.exportId };
    const dying = countedBlobs(4);
    await expect(writeBundle(writer(dying.blobs).deps, message, first)).rejects.toThrow(
      "the worker died",
    );
    const saved = await jobs.get(workspaceId, job.exportId);
    expect(saved).toMatchObject({ status: "running", leaseUntil: 0 });
    expect(saved.parts.map((p) => p.partNumber)).toEqual([1, 2, 3]);

    const next = countedBlobs();
    expect(await writeBundle(writer(next.blobs).deps, message, first)).toBe("ready");
    // Part 4 onwards: nothing written again, nothing skipped.
    expect(next.parts[0]).toBe(4);
    const ready = await jobs.get(workspaceId, job.exportId);
    expect(ready.status).toBe("ready");
    const records = await recordsOf(ready.objectKey);
    expect(records).toEqual(await straightRead());
    expect(records.filter((line) => line.includes('"kind":"event"'))).toHaveLength(EVENTS);
    expect(ready.counts.event).toBe(EVENTS);
    expect(3 + next.parts.length).toBeGreaterThan(5);
  });

  it("hands the rest to a message of its own when its time slice is spent", async () => {
    const job = await jobs.create(workspaceId);
    const message = { kind: "export" as const, workspaceId, exportId: job.exportId };
    const { blobs, parts } = countedBlobs();
    const { deps, sent } = writer(blobs, { sliceMs: 0 });
    const outcomes: string[] = [];
    for (let outcome = ""; outcome !== "ready"; ) {
      outcome = await writeBundle(deps, message, first);
      outcomes.push(outcome);
      expect(outcomes.length).toBeLessThan(100);
    }
    // One part a message, each message sending the next.
    expect(outcomes.length).toBe(parts.length);
    expect(sent).toHaveLength(parts.length - 1);
    expect(sent.every((m) => m.exportId === job.exportId)).toBe(true);
    const ready = await jobs.get(workspaceId, job.exportId);
    expect(await recordsOf(ready.objectKey)).toEqual(await straightRead());
  });

  it("writes nothing for a delivery while another holds the export, and comes back after", async () => {
    const job = await jobs.create(workspaceId);
    const message = { kind: "export" as const, workspaceId, exportId: job.exportId };
    const now = Date.now();
    expect(await jobs.take(job, now, now + 60_000)).toBeDefined();
    const { blobs, parts } = countedBlobs();
    const busy = writer(blobs);
    expect(await writeBundle(busy.deps, message, first)).toBe("busy");
    expect(parts).toEqual([]);
    // Back when the holder's lease has ended, in case its worker died holding it.
    expect(busy.sent).toEqual([message]);
    expect(busy.delays[0]).toBeGreaterThanOrEqual(60);
    expect(busy.delays[0]).toBeLessThanOrEqual(61);
  });

  it("fails the export when its message's last delivery fails, and then does nothing", async () => {
    const job = await jobs.create(workspaceId);
    const message = { kind: "export" as const, workspaceId, exportId: job.exportId };
    const broken = countedBlobs(1);
    expect(await writeBundle(writer(broken.blobs).deps, message, last)).toBe("failed");
    expect(await jobs.get(workspaceId, job.exportId)).toMatchObject({
      status: "failed",
      error: expect.stringContaining("could not be written"),
    });
    expect(await writeBundle(writer(countedBlobs().blobs).deps, message, first)).toBe(
      "done already",
    );
    const gone = { ...message, exportId: "exp_01J0000000000000000000ZZZZ" };
    expect(await writeBundle(writer(aws.blobs).deps, gone, first)).toBe("gone");
  });
});
