import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { KMSClient } from "@aws-sdk/client-kms";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Config } from "../config.js";
import { tracer } from "../tracing.js";
import { Blobs } from "./blobs.js";
import { DataKeys } from "./keys.js";
import {
  type CheckMessage,
  type CrawlMessage,
  type ExportMessage,
  type IndexMessage,
  Queue,
  type WebhookMessage,
} from "./queue.js";
import { Table } from "./table.js";

export interface Stores {
  table: Table;
  blobs: Blobs;
  indexQueue: Queue<IndexMessage>;
  crawlQueue: Queue<CrawlMessage>;
  checksQueue: Queue<CheckMessage>;
  webhooksQueue: Queue<WebhookMessage>;
  /** Absent where `EXPORTS_QUEUE_URL` is not set (tests that build stores without it). */
  exportsQueue: Queue<ExportMessage> | undefined;
}

/**
 * The AWS SDK clients for a configuration. Endpoints come from the SDK's own variables
 * (AWS_ENDPOINT_URL_DYNAMODB, _S3, _SQS), which is how the local runtime points them at emulators.
 * Each call is a subsegment of the function's X-Ray trace on AWS (Tracer; a no-op elsewhere).
 */
export function createStores(config: Config): Stores {
  // Throttling and transient errors are retried by the SDK with exponential backoff and full
  // jitter ("standard" mode); permanent ones (validation, access, conditions) fail at once.
  const retries = { maxAttempts: 5, retryMode: "standard" } as const;
  const dynamo = DynamoDBDocumentClient.from(
    tracer.captureAWSv3Client(new DynamoDBClient(retries)),
    {
      marshallOptions: { removeUndefinedValues: true },
    },
  );
  const s3 = tracer.captureAWSv3Client(
    new S3Client({ ...retries, forcePathStyle: config.S3_FORCE_PATH_STYLE }),
  );
  const sqs = tracer.captureAWSv3Client(new SQSClient(retries));
  return {
    table: new Table(dynamo, config.TABLE_NAME),
    blobs: new Blobs(s3, config.BUCKET_NAME),
    indexQueue: new Queue<IndexMessage>(sqs, config.INDEX_QUEUE_URL),
    crawlQueue: new Queue<CrawlMessage>(sqs, config.CRAWL_QUEUE_URL),
    checksQueue: new Queue<CheckMessage>(sqs, config.CHECKS_QUEUE_URL),
    webhooksQueue: new Queue<WebhookMessage>(sqs, config.WEBHOOKS_QUEUE_URL),
    exportsQueue: config.EXPORTS_QUEUE_URL
      ? new Queue<ExportMessage>(sqs, config.EXPORTS_QUEUE_URL)
      : undefined,
  };
}

/**
 * Envelope encryption under the service's KMS key (`DATA_KEY_ID`), for the functions granted it
 * (the manifest's `access.keys`). The endpoint comes from AWS_ENDPOINT_URL_KMS, which the local
 * runtime points at its own KMS (infra/local/keys.ts).
 */
export function createDataKeys(config: Config): DataKeys {
  if (!config.DATA_KEY_ID) {
    throw new Error("Invalid configuration: DATA_KEY_ID (the KMS key of secrets) is not set");
  }
  const kms = tracer.captureAWSv3Client(new KMSClient({ maxAttempts: 5, retryMode: "standard" }));
  return new DataKeys(kms, config.DATA_KEY_ID);
}
