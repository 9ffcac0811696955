import { createRequire } from "node:module";
import type { Connection, Table as LanceTable } from "@lancedb/lancedb";

/**
 * LanceDB, loaded on first use. The package is a large native module (its size per function:
 * docs/decisions/0001-search-engine.md) and takes about half a second to import: code paths that
 * never search or index (most functions) never pay it.
 */

type Lance = typeof import("@lancedb/lancedb");
type Arrow = typeof import("apache-arrow");

export interface Engine {
  lance: Lance;
  arrow: Arrow;
}

let loading: Promise<Engine> | undefined;
const requireCommonJs = createRequire(import.meta.url);

export function engine(): Promise<Engine> {
  // LanceDB sizes its CPU thread pool from the machine's cores. On a 2-core machine (and a
  // Lambda's 1 or 2 vCPUs) building a full-text index of about 100k rows with that default
  // deadlocked: the build hung forever at 0% CPU. With 4 threads the same build finishes (about
  // 19 s). The pool is created when the native module loads, so the variable must be set before
  // the import; a value set by the operator wins.
  process.env.LANCE_CPU_THREADS ??= "4";
  // Apache Arrow is the CommonJS copy LanceDB itself requires. An ESM import would load the
  // package's second build beside it: about 150 ms more of a cold start, and schemas built from
  // classes the engine does not share.
  loading ??= import("@lancedb/lancedb").then((lance) => ({
    lance,
    arrow: requireCommonJs("apache-arrow") as Arrow,
  }));
  return loading;
}

/** Where the indexes live: a local directory, or S3 (`s3://bucket/prefix`). */
export interface SearchLocation {
  uri: string;
  /** An S3-compatible server other than AWS, such as the local emulator; on AWS leave it out. */
  s3?: S3Endpoint;
}

export interface S3Endpoint {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** The engine's object store settings for an S3-compatible endpoint (path-style, plain HTTP). */
export function storageOptions(s3: S3Endpoint | undefined): Record<string, string> | undefined {
  if (!s3) return undefined;
  return {
    endpoint: s3.endpoint,
    // The engine reads AWS_ENDPOINT_URL_S3 from the environment over `endpoint`; this key wins.
    aws_endpoint_url_s3: s3.endpoint,
    region: s3.region,
    aws_access_key_id: s3.accessKeyId,
    aws_secret_access_key: s3.secretAccessKey,
    allow_http: String(s3.endpoint.startsWith("http://")),
    virtual_hosted_style_request: "false",
  };
}

/** A table of a workspace's database, or undefined when nothing has created it yet. */
export async function openTable(db: Connection, name: string): Promise<LanceTable | undefined> {
  try {
    return await db.openTable(name);
  } catch (err) {
    if (err instanceof Error && /was not found/.test(err.message)) return undefined;
    throw err;
  }
}
