import type { Config } from "../config.js";
import type { Table } from "../store/table.js";
import { DynamoWriterLock } from "../store/writer-lock.js";
import type { S3Endpoint, SearchLocation } from "./engine.js";
import { SearchIndex } from "./search-index.js";

/**
 * Where a configuration keeps its search index: `SEARCH_INDEX_URI`, or `s3://<bucket>/search`.
 * An S3 endpoint set for the SDK (an emulator) is handed to the engine too, with the SDK's
 * credentials; on AWS the engine finds the function's role credentials itself.
 */
export function searchLocation(
  config: Config,
  env: NodeJS.ProcessEnv = process.env,
): SearchLocation {
  const uri = config.SEARCH_INDEX_URI ?? `s3://${config.BUCKET_NAME}/search`;
  const endpoint = env.AWS_ENDPOINT_URL_S3;
  if (!uri.startsWith("s3://") || !endpoint) return { uri };
  const s3: S3Endpoint = {
    endpoint,
    region: env.AWS_REGION ?? "us-east-1",
    accessKeyId: env.AWS_ACCESS_KEY_ID ?? "",
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? "",
  };
  return { uri, s3 };
}

/** The search index of a configuration, its writers serialised by a lease in the table. */
export function createSearchIndex(config: Config, table: Table): SearchIndex {
  return new SearchIndex({
    location: searchLocation(config),
    lock: new DynamoWriterLock(table),
    minSimilarity: config.EMBEDDING_MIN_SIMILARITY,
  });
}
