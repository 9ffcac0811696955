import { writeSync } from "node:fs";
import { chunkDocument, normalizeDocument } from "../../lib/knowledge/indexing/chunking.js";
import { SearchIndex, type SourceDocument } from "../../lib/search/index.js";
import { resident } from "../core/resident.js";
import type { FloorAnswer, FloorTask } from "./protocol.js";
import { sourceText } from "./texts.js";

/**
 * The ingestion figure's floor, in a fresh process: every text of the import chunked with the
 * project's chunker, then one bulk build of the engine's index over those rows (written with
 * maintenance deferred, a batch of sources at a time, then optimized once), on the same S3
 * emulator behind the same counter. Answers `FloorAnswer` on file descriptor 3. Usage (from the
 * figure): node --import tsx bench/ingestion/floor.ts '<FloorTask as JSON>'.
 */

const task = JSON.parse(process.argv[2] ?? "{}") as FloorTask;
/** Sources written per commit: about 8k rows, as a bulk load writes. */
const BATCH_SOURCES = 10;

// The only writer of its workspace: no lease to take.
const index = new SearchIndex({
  location: task.location,
  lock: { withLock: (_workspaceId, fn) => fn() },
});
let chunks = 0;
let chunkMs = 0;
let buildMs = 0;
const since = (started: number) => performance.now() - started;
for (let first = 0; first < task.sources; first += BATCH_SOURCES) {
  const batch: SourceDocument[] = [];
  for (let i = first; i < Math.min(task.sources, first + BATCH_SOURCES); i++) {
    const text = sourceText(task.seed, i, task.sourceBytes);
    const started = performance.now();
    const sourceChunks = chunkDocument(normalizeDocument(text), task.chunking);
    chunkMs += since(started);
    chunks += sourceChunks.length;
    batch.push({
      source: { id: `kb_floor${i}`, type: "text", crawlId: null },
      chunks: sourceChunks.map((chunk) => ({
        chunkIndex: chunk.index,
        text: chunk.text,
        heading: chunk.heading,
        page: chunk.page ?? null,
      })),
    });
  }
  const started = performance.now();
  await index.replaceSources(task.workspaceId, batch, { maintain: false });
  buildMs += since(started);
}
const started = performance.now();
await index.optimize(task.workspaceId);
buildMs += since(started);
const answer: FloorAnswer = {
  chunks,
  chunkMs,
  buildMs,
  peakRssMb: (await resident("self")).peakMb,
};
writeSync(3, JSON.stringify(answer));
// The engine's connections would keep the process alive.
process.exit(0);
