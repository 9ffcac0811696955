import type { EmbeddingSpace } from "../../llm/embeddings.js";
import type { SearchIndex, SourceDocument } from "../../search/index.js";
import type { Blobs } from "../../store/blobs.js";
import { type Table, wsKey } from "../../store/table.js";
import { SOURCE_PREFIX, type SourceItem } from "../sources/records.js";
import { claimUrlSources } from "../sources/url-claims.js";
import { loadVectors, matrixRows } from "./embeddings.js";
import { type StoredChunks, searchDocument } from "./indexer.js";

export interface MigrationDeps {
  table: Table;
  blobs: Blobs;
  search: SearchIndex;
  /** The configured embedding space: stored vectors in it are carried into the index too. */
  space?: EmbeddingSpace | undefined;
}

export interface MigrationReport {
  sources: number;
  chunks: number;
  vectors: number;
  /** URL sources given the claim of their URL they predate (see `claimUrlSources`). */
  urlsClaimed: number;
  /** URL sources that copy an older source's URL: to delete by hand. */
  duplicates: string[];
}

/** Sources loaded and written together: one commit per table for each batch. */
const BATCH = 50;

/**
 * Brings a workspace's records up to date with this version. Writes its indexed sources from
 * their stored chunk sets (and vectors, in the configured space) into the search index: how a
 * deployment that searched in memory gets its persisted index. And gives URL sources that predate
 * one source per URL the claim of their URL. Safe to run twice or on a live system: rows are
 * replaced by id, so a second run changes nothing, and a source indexed meanwhile was written by
 * the worker already. The index is maintained once at the end of the workspace, not after every
 * batch.
 */
export async function migrateWorkspace(
  deps: MigrationDeps,
  workspaceId: string,
): Promise<MigrationReport> {
  const all = await deps.table.all<SourceItem>(wsKey(workspaceId), SOURCE_PREFIX);
  const claims = await claimUrlSources(deps.table, workspaceId, all);
  const report: MigrationReport = {
    sources: 0,
    chunks: 0,
    vectors: 0,
    urlsClaimed: claims.claimed,
    duplicates: claims.duplicates,
  };
  const sources = all.filter((source) => source.status === "indexed" && source.chunks_key);
  for (let i = 0; i < sources.length; i += BATCH) {
    const documents: SourceDocument[] = [];
    for (const source of sources.slice(i, i + BATCH)) {
      const document = await documentOf(deps, source);
      if (!document) continue;
      documents.push(document);
      report.sources++;
      report.chunks += document.chunks.length;
      report.vectors += document.vectors?.vectors.length ?? 0;
    }
    await deps.search.replaceSources(workspaceId, documents, { maintain: false });
  }
  if (report.sources > 0) await deps.search.optimize(workspaceId);
  return report;
}

async function documentOf(
  { blobs, space }: MigrationDeps,
  source: SourceItem,
): Promise<SourceDocument | undefined> {
  const chunksKey = source.chunks_key as string;
  const stored = await blobs.getJson<StoredChunks>(chunksKey);
  if (!stored) return undefined;
  const matrix = space ? await loadVectors(blobs, chunksKey, space) : undefined;
  // Vectors that do not match their chunk set are left out: the source is then found lexically.
  const vectors = matrix?.count === stored.chunks.length ? matrixRows(matrix) : undefined;
  return searchDocument(source, stored.chunks, space && vectors && { space, vectors });
}
