import { mapLimit } from "../../async.js";
import type { KeyStore } from "../../auth/keys.js";
import {
  COMPETITOR_PREFIX,
  type CompetitorItem,
  toPublic as publicCompetitor,
} from "../../competitors/competitors.js";
import { EVENT_PREFIX, type EventItem, toPublic as publicEvent } from "../../competitors/events.js";
import type { Snapshot } from "../../competitors/snapshot.js";
import {
  ARTIFACT_PREFIX,
  type ArtifactItem,
  toPublic as publicArtifact,
} from "../../intel/artifacts/artifacts.js";
import type { BrandProfiles } from "../../intel/brand/profiles.js";
import { toPublicCrawl } from "../../knowledge/crawl/crawls.js";
import { CRAWL_PREFIX, type CrawlItem } from "../../knowledge/crawl/records.js";
import type { StoredChunks } from "../../knowledge/indexing/indexer.js";
import {
  toPublic as publicSource,
  SOURCE_PREFIX,
  type SourceItem,
} from "../../knowledge/sources/records.js";
import type { Quotas } from "../../limits/quotas.js";
import type { Blobs } from "../../store/blobs.js";
import { cursorAfter, type Item, type Table, wsKey } from "../../store/table.js";
import {
  MAX_ENDPOINTS,
  toPublicEndpoint,
  type WebhookEndpoints,
} from "../../webhooks/endpoints.js";
import { BUNDLE_START, type BundlePosition, type RecordKind } from "./format.js";

/**
 * The records of a workspace's export bundle (its format: `format.ts`), section by section in
 * the order of `SECTIONS`. What is exported is what the API shows of each record: a source with
 * its text as indexed (its chunks, in order; neighbours overlap by up to `CHUNK_OVERLAP`
 * characters), a competitor with its latest snapshot, webhook endpoints without their signing
 * secrets. API keys, their hashes, idempotency records, counters and leases are not the tenant's
 * data and are never read.
 *
 * Reading is resumable: every line carries the position after it, and reading again from a
 * position yields exactly the records after it. Positions name sort keys, never a partition, as
 * list cursors do: a record added while an export runs is in it if it sorts after the position.
 */

/** One line of the bundle, without its line break, and the position after it. */
export interface BundleLine {
  kind: RecordKind;
  text: string;
  after: BundlePosition;
}

export interface BundleDeps {
  table: Table;
  blobs: Blobs;
  keys: KeyStore;
  brands: BrandProfiles;
  endpoints: WebhookEndpoints;
  /** Today's usage of the quotas, when given. */
  quotas?: Quotas | undefined;
}

type Exported = Record<string, unknown>;

/**
 * One read of a section from a cursor: records with the cursor after each (null after the last
 * record of a section that has no more), and whether a next read is needed.
 */
interface SectionPage {
  records: Array<{ record: Exported; after: string | null }>;
  next: string | null;
}

interface Section {
  kind: RecordKind;
  read(deps: BundleDeps, workspaceId: string, cursor: string | null): Promise<SectionPage>;
}

/** A section of one record, or none. */
const single = (
  kind: RecordKind,
  read: (deps: BundleDeps, workspaceId: string) => Promise<Exported | undefined>,
): Section => ({
  kind,
  async read(deps, workspaceId) {
    const record = await read(deps, workspaceId);
    return { records: record ? [{ record, after: null }] : [], next: null };
  },
});

/** Chunk sets read at once while a page of sources is exported. */
const CHUNK_READS = 4;

/**
 * A section of the items of the workspace's partition under `prefix`, oldest key first, a page
 * of `limit` at a time, each exported by `map` (a page's items mapped together).
 */
const items = <T extends Item>(
  kind: RecordKind,
  prefix: string,
  limit: number,
  map: (deps: BundleDeps, items: T[]) => Promise<Exported[]>,
): Section => ({
  kind,
  async read(deps, workspaceId, cursor) {
    const page = await deps.table.page<T>({
      pk: wsKey(workspaceId),
      skPrefix: prefix,
      limit,
      cursor: cursor ?? undefined,
    });
    const records = await map(deps, page.items);
    return {
      records: records.map((record, i) => ({
        record,
        after: cursorAfter(page.items[i]?.sk ?? ""),
      })),
      next: page.nextCursor,
    };
  },
});

/** The chunks a source was indexed from, or null when it has none (not indexed yet, failed). */
async function chunksOf(blobs: Blobs, source: SourceItem) {
  if (!source.chunks_key) return null;
  const stored = await blobs.getJson<StoredChunks>(source.chunks_key);
  return (
    stored?.chunks.map((chunk) => ({
      index: chunk.index,
      heading: chunk.heading,
      ...(chunk.page !== undefined ? { page: chunk.page } : {}),
      text: chunk.text,
    })) ?? null
  );
}

/** The sections of a bundle, in order. Appending one keeps the positions of the others. */
export const SECTIONS: readonly Section[] = [
  single("workspace", async ({ keys }, workspaceId) => {
    const workspace = await keys.getWorkspace(workspaceId);
    return workspace && { ...workspace };
  }),
  single("brand", async ({ brands }, workspaceId) => {
    const profile = await brands.get(workspaceId);
    return profile && { ...profile };
  }),
  single("usage", async ({ quotas }, workspaceId) => {
    const usage = await quotas?.usage(workspaceId);
    return usage && { ...usage };
  }),
  items<SourceItem>("source", SOURCE_PREFIX, 20, ({ blobs }, sources) =>
    mapLimit(sources, CHUNK_READS, async (source) => ({
      ...publicSource(source),
      chunks: await chunksOf(blobs, source),
    })),
  ),
  items<CrawlItem>("crawl", CRAWL_PREFIX, 100, async (_deps, crawls) =>
    crawls.map((crawl) => ({ ...toPublicCrawl(crawl) })),
  ),
  items<ArtifactItem>("artifact", ARTIFACT_PREFIX, 50, async (_deps, artifacts) =>
    artifacts.map((artifact) => ({ ...publicArtifact(artifact) })),
  ),
  items<CompetitorItem>("competitor", COMPETITOR_PREFIX, 20, ({ blobs }, competitors) =>
    mapLimit(competitors, CHUNK_READS, async (competitor) => ({
      ...publicCompetitor(competitor),
      pages: competitor.pages ?? {},
      latestSnapshot: competitor.snapshotKey
        ? ((await blobs.getJson<Snapshot>(competitor.snapshotKey)) ?? null)
        : null,
    })),
  ),
  items<EventItem>("event", EVENT_PREFIX, 100, async (_deps, events) =>
    events.map((event) => ({ ...publicEvent(event) })),
  ),
  {
    // At most MAX_ENDPOINTS: one read, oldest first; the cursor is the last endpoint's id.
    kind: "webhook",
    async read({ endpoints }, workspaceId, cursor) {
      const page = await endpoints.list(workspaceId, MAX_ENDPOINTS);
      const records = page.items
        .map(toPublicEndpoint)
        .filter((endpoint) => cursor === null || endpoint.id > cursor)
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((endpoint) => ({ record: { ...endpoint }, after: endpoint.id }));
      return { records, next: null };
    },
  },
];

/** The position after the last record: nothing is left to read. */
export const BUNDLE_END: BundlePosition = { section: SECTIONS.length, cursor: null };

/**
 * The bundle's record lines from `from` on (header and trailer excluded), read a page at a time:
 * memory holds one page of records, whatever the workspace's size.
 */
export async function* bundleLines(
  deps: BundleDeps,
  workspaceId: string,
  from: BundlePosition = BUNDLE_START,
): AsyncGenerator<BundleLine> {
  for (let index = from.section; index < SECTIONS.length; index++) {
    const section = SECTIONS[index] as Section;
    let cursor = index === from.section ? from.cursor : null;
    for (;;) {
      const page = await section.read(deps, workspaceId, cursor);
      for (const { record, after } of page.records) {
        yield {
          kind: section.kind,
          text: JSON.stringify({ kind: section.kind, ...record }),
          after:
            after === null
              ? { section: index + 1, cursor: null }
              : { section: index, cursor: after },
        };
      }
      if (!page.next) break;
      cursor = page.next;
    }
  }
}
