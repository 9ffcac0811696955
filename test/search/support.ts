import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ensureTable, startDynamo, startS3 } from "../../infra/local/emulators.js";
import { engine, storageOptions } from "../../lib/search/engine.js";
import {
  DynamoWriterLock,
  type IndexedChunk,
  type LeaseOptions,
  SearchIndex,
  type SearchIndexOptions,
  type SearchLocation,
  type SourceDocument,
  type WriterLock,
} from "../../lib/search/index.js";
import { Table } from "../../lib/store/table.js";

export const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
export const region = "us-east-1";
const BUCKET = "search-test";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What the search tests run on: a DynamoDB emulator (dynalite) for the writer lock, an S3
 * emulator (s3rver) and a temporary directory for the engine's data: the real engine on both of
 * the stores it runs on, nothing mocked.
 */
export interface SearchStores {
  table: Table;
  /** The engine's data on local disk. */
  disk: SearchLocation;
  /** The engine's data in the S3 emulator. */
  s3: SearchLocation;
  close(): Promise<void>;
}

export async function startSearchStores(): Promise<SearchStores> {
  const [dynamo, s3] = await Promise.all([startDynamo(), startS3(undefined, [BUCKET])]);
  const client = new DynamoDBClient({ endpoint: dynamo.endpoint, region, credentials });
  await ensureTable(client, "search-test");
  const dir = await mkdtemp(join(tmpdir(), "search-"));
  return {
    table: new Table(
      DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
      "search-test",
    ),
    disk: { uri: join(dir, "search") },
    s3: { uri: `s3://${BUCKET}/search`, s3: { endpoint: s3.endpoint, region, ...credentials } },
    async close() {
      client.destroy();
      // The engine's HTTP client keeps idle connections to s3rver for up to a minute and a half,
      // and s3rver's close waits for them: give it a moment, then let the test process end it.
      const s3Closed = Promise.race([s3.close(), sleep(1000)]);
      await Promise.all([dynamo.close(), s3Closed, rm(dir, { recursive: true, force: true })]);
    },
  };
}

/** A search index on `location` with its own writer lock: what one process holds. */
export function indexOn(
  stores: SearchStores,
  location: SearchLocation,
  options: Omit<SearchIndexOptions, "location" | "lock"> = {},
  lease: LeaseOptions = {},
): SearchIndex {
  return new SearchIndex({
    location,
    lock: new DynamoWriterLock(stores.table, lease),
    ...options,
  });
}

/** No lock at all: what the race test shows is not enough on S3. */
export const noLock: WriterLock = { withLock: (_workspaceId, fn) => fn() };

/** A source of `texts.length` chunks, heading `heading` on each. */
export function doc(
  id: string,
  texts: string[],
  extra: Partial<Omit<SourceDocument, "chunks">> & { heading?: string | null } = {},
): SourceDocument {
  const chunks: IndexedChunk[] = texts.map((text, chunkIndex) => ({
    chunkIndex,
    text,
    heading: extra.heading ?? null,
    page: null,
  }));
  return {
    source: extra.source ?? { id, type: "text", crawlId: null },
    chunks,
    ...(extra.vectors ? { vectors: extra.vectors } : {}),
  };
}

/** A seeded PRNG (the bench corpus's mulberry32), so "random" vectors are the same every run. */
export { prng as seeded } from "../../bench/core/corpus.js";

/** A workspace's database opened beside the index under test: the engine's own view of it. */
export async function openDatabase(location: SearchLocation, workspaceId: string) {
  const { lance } = await engine();
  return lance.connect(`${location.uri}/${workspaceId}`, {
    readConsistencyInterval: 0,
    ...(location.s3 ? { storageOptions: storageOptions(location.s3) } : {}),
  });
}

/** A table of the workspace's registry (`lib/search/segments.ts`), as the engine stores it. */
export interface RegisteredTable {
  name: string;
  family: string;
  level: number;
  rows: number;
  retired_at: number;
}

/** The workspace's registry rows, segments by name (oldest first), retired ones too. */
export async function registryOf(
  location: SearchLocation,
  workspaceId: string,
): Promise<RegisteredTable[]> {
  const db = await openDatabase(location, workspaceId);
  const rows = (await (
    await db.openTable("segments")
  )
    .query()
    .select(["name", "family", "level", "rows", "retired_at"])
    .toArray()) as RegisteredTable[];
  return rows
    .map((row) => ({ ...row }))
    .sort((a, b) => a.level - b.level || a.name.localeCompare(b.name));
}
