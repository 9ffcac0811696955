import type { SearchLocation } from "../../lib/search/index.js";

/** What the figure asks a fresh searching process to do (one JSON argument). */
export type ProbeTask = {
  queries: string[];
  /** Warm rounds over every query after the first search. */
  rounds: number;
} & (
  | {
      engine: "lancedb";
      location: SearchLocation;
      workspaceId: string;
      /** The first search is hybrid with this vector (and warm hybrid rounds run too). */
      hybrid?: { space: string; vector: number[] };
      /** Sources excluded in a third warm series: the cost of the engine's prefilter. */
      excludeSourceIds: string[];
      /**
       * The last warm series' queries, none of them in `queries`: words an earlier series read
       * would be cheaper the second time, and this series should differ from the first in one
       * thing only.
       */
      changedQueries: string[];
    }
  | {
      engine: "minisearch";
      /** The snapshot: a file, or an object in the S3 emulator. */
      snapshot: { file: string } | { endpoint: string; bucket: string; key: string };
    }
);

/** What it answers on file descriptor 3. Times in ms; `bootMs` since the process started. */
export interface ProbeAnswer {
  /** Node booted and the probe's own code loaded. */
  bootMs: number;
  /**
   * The search modules imported: `lib/search` with LanceDB's native module, Apache Arrow and the
   * DynamoDB client its writer lock uses; or MiniSearch (and the S3 client for a snapshot in S3).
   */
  importMs: number;
  /** From imported to the first answer: open (or download and load the snapshot) and search. */
  firstMs: number;
  /** Hits of the first search. */
  firstHits: number;
  warm: number[];
  warmHybrid: number[];
  warmFiltered: number[];
  /**
   * Lexical again, each search bringing a higher generation, as after every change to the
   * workspace: each first looks for a newer version of the index.
   */
  warmChanged: number[];
  /** Resident memory after the warm searches, MB. */
  rssMb: number;
}

/** Written on file descriptor 3 the moment the first search answers, before the report. */
export const FIRST_ANSWERED = "F";
