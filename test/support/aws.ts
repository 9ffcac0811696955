import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { Quotas } from "../../lib/limits/quotas.js";
import { ensureTable, startDynamo, startS3 } from "../../lib/local/emulators.js";
import { LocalQueues } from "../../lib/local/queues.js";
import { Blobs } from "../../lib/store/blobs.js";
import { Queue } from "../../lib/store/queue.js";
import { Table } from "../../lib/store/table.js";

export interface TestAws {
  table: Table;
  blobs: Blobs;
  queues: LocalQueues;
  /** A real SQS client pointed at the local queue endpoint, sending to queue `name`. */
  queue(name: string): Queue;
  close(): Promise<void>;
}

const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
const region = "us-east-1";

/**
 * In-memory DynamoDB (dynalite) and S3 (s3rver) emulators plus the local SQS endpoint, with a
 * fresh table and bucket: what every store-level test runs against instead of mocks.
 */
export async function startAws(): Promise<TestAws> {
  const dynamo = await startDynamo();
  const s3 = await startS3(undefined, ["test-bucket"]);
  const queues = new LocalQueues({ maxReceiveCount: 3, retryDelayMs: 20 });
  const sqsEndpoint = await queues.start();
  const dynamoClient = new DynamoDBClient({ endpoint: dynamo.endpoint, region, credentials });
  await ensureTable(dynamoClient, "test-table");
  const sqs = new SQSClient({ endpoint: sqsEndpoint, region, credentials });
  return {
    table: new Table(
      DynamoDBDocumentClient.from(dynamoClient, {
        marshallOptions: { removeUndefinedValues: true },
      }),
      "test-table",
    ),
    blobs: new Blobs(
      new S3Client({ endpoint: s3.endpoint, region, credentials, forcePathStyle: true }),
      "test-bucket",
    ),
    queues,
    queue: (name) => new Queue(sqs, queues.create(name)),
    async close() {
      await queues.close();
      await Promise.all([dynamo.close(), s3.close()]);
    },
  };
}

/** Daily quotas too large to matter, for tests about something else. */
export const roomyQuotas = (table: Table) =>
  new Quotas(table, {
    crawl_pages: 1e9,
    upload_bytes: 1e12,
    model_calls: 1e9,
    competitor_checks: 1e9,
  });
