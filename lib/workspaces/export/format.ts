/**
 * The export bundle's format, apart from the code that reads the records (`bundle.ts`): what the
 * API's contract and the job records name without loading every domain. NDJSON, one JSON object a
 * line with its `kind`: a header line (`kind: "export"`), the records, a trailer (`kind: "end"`)
 * with the count of each kind, so a reader can tell a whole bundle from a cut one.
 */

export const BUNDLE_FORMAT = "kb-intel-export/1";
export const BUNDLE_CONTENT_TYPE = "application/x-ndjson";

/** The kinds of record, in the order the bundle holds them. */
export const RECORD_KINDS = [
  "workspace",
  "brand",
  "usage",
  "source",
  "crawl",
  "artifact",
  "competitor",
  "event",
  "webhook",
] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];
export type RecordCounts = Record<RecordKind, number>;

export const noRecords = (): RecordCounts =>
  Object.fromEntries(RECORD_KINDS.map((kind) => [kind, 0])) as RecordCounts;

/** Where reading a bundle stands: the section, and the cursor within it (null: its start). */
export interface BundlePosition {
  section: number;
  cursor: string | null;
}

export const BUNDLE_START: BundlePosition = { section: 0, cursor: null };

/** The bundle's first line. */
export const headerLine = (workspaceId: string, exportId: string | null, startedAt: string) =>
  JSON.stringify({ kind: "export", format: BUNDLE_FORMAT, workspaceId, exportId, startedAt });

/** The bundle's last line: how many records of each kind it holds. */
export const trailerLine = (counts: RecordCounts, completedAt: string) =>
  JSON.stringify({ kind: "end", counts, completedAt });
