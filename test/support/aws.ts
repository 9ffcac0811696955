import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { KMSClient } from "@aws-sdk/client-kms";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ensureTable, startDynamo, startS3 } from "../../infra/local/emulators.js";
import { LOCAL_KEY, LocalKms } from "../../infra/local/keys.js";
import { LocalQueues } from "../../infra/local/queues.js";
import type { ChunkingOptions } from "../../lib/knowledge/indexing/chunking.js";
import { Indexer, type IndexerDeps } from "../../lib/knowledge/indexing/indexer.js";
import { Passages } from "../../lib/knowledge/indexing/passages.js";
import { LiveSources } from "../../lib/knowledge/retrieval/live-sources.js";
import type { Reranker } from "../../lib/knowledge/retrieval/reranker.js";
import { IndexRetriever } from "../../lib/knowledge/retrieval/retrieval.js";
import { Sources } from "../../lib/knowledge/sources/sources.js";
import { Quotas } from "../../lib/limits/quotas.js";
import type { Embedder } from "../../lib/llm/embeddings.js";
import { DynamoWriterLock, SearchIndex } from "../../lib/search/index.js";
import { Blobs } from "../../lib/store/blobs.js";
import { DataKeys } from "../../lib/store/keys.js";
import { Queue } from "../../lib/store/queue.js";
import { Table } from "../../lib/store/table.js";

export interface TestAws {
  table: Table;
  blobs: Blobs;
  /** The persisted search index, on local disk in a folder of its own. */
  search: SearchIndex;
  queues: LocalQueues;
  /** Envelope encryption through a real KMS client, against the local KMS endpoint. */
  dataKeys: DataKeys;
  /** The local KMS endpoint's URL. */
  kmsEndpoint: string;
  /** A real SQS client pointed at the local queue endpoint, sending to queue `name`. */
  queue<T>(name: string): Queue<T>;
  close(): Promise<void>;
}

const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
const region = "us-east-1";

/**
 * In-memory DynamoDB (dynalite) and S3 (s3rver) emulators plus the local SQS and KMS endpoints,
 * with a fresh table and bucket: what every store-level test runs against instead of mocks.
 */
export async function startAws(): Promise<TestAws> {
  const dynamo = await startDynamo();
  const s3 = await startS3(undefined, ["test-bucket"]);
  const queues = new LocalQueues({ maxReceiveCount: 3, retryDelayMs: 20 });
  const sqsEndpoint = await queues.start();
  const kms = new LocalKms();
  const kmsEndpoint = await kms.start();
  const dynamoClient = new DynamoDBClient({ endpoint: dynamo.endpoint, region, credentials });
  await ensureTable(dynamoClient, "test-table");
  const sqs = new SQSClient({ endpoint: sqsEndpoint, region, credentials });
  const table = new Table(
    DynamoDBDocumentClient.from(dynamoClient, { marshallOptions: { removeUndefinedValues: true } }),
    "test-table",
  );
  const searchDir = await mkdtemp(join(tmpdir(), "kb-search-"));
  return {
    table,
    search: new SearchIndex({ location: { uri: searchDir }, lock: new DynamoWriterLock(table) }),
    blobs: new Blobs(
      new S3Client({ endpoint: s3.endpoint, region, credentials, forcePathStyle: true }),
      "test-bucket",
    ),
    queues,
    dataKeys: new DataKeys(
      new KMSClient({ endpoint: kmsEndpoint, region, credentials }),
      LOCAL_KEY.alias,
    ),
    kmsEndpoint,
    queue: (name) => new Queue(sqs, queues.create(name)),
    async close() {
      await queues.close();
      await Promise.all([
        dynamo.close(),
        s3.close(),
        kms.close(),
        rm(searchDir, { recursive: true, force: true }),
      ]);
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
    exports: 1e9,
    reindexes: 1e9,
  });

/** The knowledge sources service over the emulated stores, queueing to their `index` queue. */
export const sourcesOn = (aws: TestAws) =>
  new Sources({ table: aws.table, blobs: aws.blobs, indexQueue: aws.queue("index") });

/** An indexer over the emulated stores with the given content loaders. */
export const indexerOn = (
  aws: TestAws,
  loaders: IndexerDeps["loaders"],
  chunking: ChunkingOptions = { size: 300, overlap: 50 },
  embedder?: Embedder,
) =>
  new Indexer({
    table: aws.table,
    blobs: aws.blobs,
    search: aws.search,
    chunking,
    loaders,
    embedder,
  });

/** Search over the emulated stores' index, hybrid when given an embedder, reranked when given one. */
export const retrieverOn = (aws: TestAws, embedder?: Embedder, reranker?: Reranker) =>
  new IndexRetriever({
    index: aws.search,
    live: new LiveSources(aws.table),
    embedder,
    passages: new Passages(aws.blobs),
    reranker,
  });
