import type { ChunkingOptions } from "../../lib/knowledge/indexing/chunking.js";
import type { SearchLocation } from "../../lib/search/index.js";

/** What the runtime process (`runtime-process.ts`) answers on file descriptor 3 once it listens. */
export interface RuntimeReady {
  url: string;
  /** The default workspace, whose key is the one the figure passed. */
  workspaceId: string;
  /** The S3 counter in front of the emulator: the service's S3 endpoint. */
  counter: string;
  chunking: ChunkingOptions;
}

/** What the figure asks the runtime process to do (one JSON argument). */
export interface RuntimeTask {
  dataDir: string;
  apiKey: string;
}

/** What the floor process (`floor.ts`) is asked to build (one JSON argument). */
export interface FloorTask {
  location: SearchLocation;
  workspaceId: string;
  /** The sources' texts: `sourceText(seed, i, bytes)` for i below `sources`. */
  seed: number;
  sources: number;
  sourceBytes: number;
  chunking: ChunkingOptions;
}

/** What the floor process answers on file descriptor 3. Times in ms. */
export interface FloorAnswer {
  chunks: number;
  /** Normalizing and chunking every text, as the index worker does. */
  chunkMs: number;
  /** Writing every row with maintenance deferred, then the index's one optimize. */
  buildMs: number;
  peakRssMb: number;
}
