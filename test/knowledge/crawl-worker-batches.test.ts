import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Emulator, ensureTable, startDynamo } from "../../infra/local/emulators.js";

/**
 * The crawl worker's handler as the local runtime calls it: two batches at once in one process.
 * Each batch answers its own failed records: a record that failed is retried, never dropped
 * because another batch began meanwhile (a batch processor shared by invocations kept one list of
 * failures, which the second batch emptied: the page stayed queued until the watchdog).
 */

let dynamo: Emulator;
let handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

beforeAll(async () => {
  dynamo = await startDynamo();
  const queue = (name: string) => `http://127.0.0.1:9/000000000000/${name}`;
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    TABLE_NAME: "batches",
    BUCKET_NAME: "batches",
    INDEX_QUEUE_URL: queue("index"),
    CRAWL_QUEUE_URL: queue("crawl"),
    CHECKS_QUEUE_URL: queue("checks"),
    WEBHOOKS_QUEUE_URL: queue("webhooks"),
  });
  await ensureTable(new DynamoDBClient({}), "batches");
  const worker = await import("../../functions/crawl-worker.js");
  handler = async (event, context) =>
    (await worker.handler(event, context, () => undefined)) ?? undefined;
});
afterAll(() => dynamo.close());

const record = (messageId: string, body: string) =>
  ({ messageId, body, attributes: { ApproximateReceiveCount: "1" } }) as SQSRecord;
/** A page of a crawl that does not exist: handled (as gone) after a read of the table. */
const gonePage = JSON.stringify({
  kind: "crawl-page",
  workspaceId: "ws_batches",
  crawlId: "crawl_none",
  pageKey: "page",
});

describe("the crawl worker's batches", () => {
  it("answer their own failed records when two run at once", async () => {
    const context = { awsRequestId: "batches" } as Context;
    const [first, second] = await Promise.all([
      handler(
        { Records: [record("first-bad", "not json"), record("first-ok", gonePage)] },
        context,
      ),
      handler({ Records: [record("second-ok", gonePage)] }, context),
    ]);
    expect(first?.batchItemFailures).toEqual([{ itemIdentifier: "first-bad" }]);
    expect(second?.batchItemFailures).toEqual([]);
  });
});
