import type { LocalRuntime } from "../../infra/local/runtime.js";
import type { S3Endpoint } from "../../lib/search/index.js";
import type { Stores } from "../../lib/store/clients.js";
import type { IndexMessage, Queue } from "../../lib/store/queue.js";
import type { Summary } from "./stats.js";

/**
 * The contract of one figure of issue 8. A figure is one file in `bench/figures/` exporting
 * `figure`; the runner finds it there, so adding a figure touches nothing else.
 */
export interface Figure {
  /** Its number in issue 8; figures run and print in this order. */
  number: number;
  /** Short name, used by `--only`. */
  id: string;
  title: string;
  /** What is measured, and beside which floor or peer, in a sentence or two of Markdown. */
  description: string;
  run(ctx: BenchContext): Promise<FigureOutput>;
}

export interface FigureOutput {
  tables: Table[];
  /** Observations the figure itself can state (sizes used, skipped rows and why). */
  notes?: string[];
}

/** A cell is a summary of samples, a plain value, or nothing (not applicable). */
export type Cell = Summary | number | string | null;

export interface Column {
  key: string;
  label: string;
  /** Appended to the label, e.g. "ms", "KB", "req/s". */
  unit?: string;
  /** Decimal places shown (default: 1). */
  digits?: number;
}

export interface Row {
  name: string;
  /** The row of the same table this one is compared with. Rows others name here are floors. */
  floor?: string;
  cells: Record<string, Cell>;
}

export interface Table {
  caption: string;
  columns: Column[];
  /** The summary column whose medians give each row's "× floor" ratio (a time: lower is better). */
  compare: string;
  rows: Row[];
}

export interface Workspace {
  workspaceId: string;
  key: string;
}

/** What the runner hands every figure. */
export interface BenchContext {
  /** Smaller sizes and fewer repetitions: checks the harness end to end, numbers are not kept. */
  quick: boolean;
  /** Scratch folder for bundles and other build output (git-ignored). */
  outDir: string;
  log(message: string): void;
  /**
   * The whole service in this process on in-memory emulators, started on first use and shared:
   * the function modules load once per process, so there can be only one runtime per run.
   */
  runtime(): Promise<LocalRuntime>;
  /** The runtime's table, bucket and index queue, as the functions see them. */
  stores(): Promise<Stores>;
  /**
   * The runtime's S3 emulator, the one S3 endpoint a figure may use in this process: the runtime
   * names it in `AWS_ENDPOINT_URL_S3`, and LanceDB takes that variable over the endpoint of its
   * storage options, so an engine pointed at a second emulator would send it requests for buckets
   * it does not have.
   */
  s3(): Promise<S3Endpoint>;
  /** A new workspace with a key on the runtime, so figures never see each other's data. */
  workspace(name: string): Promise<Workspace>;
  /**
   * A queue on the runtime's SQS endpoint that no worker consumes, sent to through the stores'
   * SQS client: the service's own code produces real messages into it, and the bench hands them
   * to a worker itself (a fresh process, or a worker called in process).
   */
  parkedQueue(name: string): Promise<ParkedQueue>;
}

export interface ParkedQueue {
  queue: Queue<IndexMessage>;
  /** Bodies sent so far, oldest first. */
  messages(): string[];
}
