import "../../infra/local/process-defaults.js";
import { writeSync } from "node:fs";
import { startLocal } from "../../infra/local/runtime.js";
import { loadConfig } from "../../lib/config.js";
import { type S3Counter, startS3Counter } from "../core/s3-counter.js";
import type { RuntimeReady, RuntimeTask } from "./protocol.js";

/**
 * The local runtime of the ingestion figure in a process of its own, so its resident memory is
 * the service's alone and a large import cannot crowd the bench: the search index in the bucket
 * (as on AWS), and the S3 counter between the service and the emulator. Answers `RuntimeReady`
 * on file descriptor 3 once it listens; SIGTERM stops it. Usage (from the figure):
 * node --import tsx bench/ingestion/runtime-process.ts '<RuntimeTask as JSON>'.
 */

const task = JSON.parse(process.argv[2] ?? "{}") as RuntimeTask;
let counter: S3Counter | undefined;
const runtime = await startLocal({
  port: 0,
  host: "127.0.0.1",
  dataDir: task.dataDir,
  apiKey: task.apiKey,
  searchInBucket: true,
  async s3Endpoint(emulator) {
    counter = await startS3Counter(emulator);
    return counter.endpoint;
  },
});
if (!counter) throw new Error("the runtime never asked for its S3 endpoint");
const config = loadConfig();
const ready: RuntimeReady = {
  url: runtime.url,
  workspaceId: runtime.workspaceId,
  counter: counter.endpoint,
  chunking: { size: config.CHUNK_SIZE, overlap: config.CHUNK_OVERLAP },
};
writeSync(3, `${JSON.stringify(ready)}\n`);
process.once("SIGTERM", () => {
  runtime
    .close()
    .then(() => counter?.close())
    .finally(() => process.exit(0));
});
