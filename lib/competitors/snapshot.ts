import { createHash } from "node:crypto";
import type { Blobs } from "../store/blobs.js";
import type { AtsVendor } from "./extract/ats.js";
import { type ContentItem, contentKey } from "./extract/content.js";
import { type JobPosting, jobKey } from "./extract/jobs.js";
import { type Messaging, maskNumbers } from "./extract/messaging.js";
import { type Plan, planKey } from "./extract/pricing.js";
import { SECTIONS, type Section } from "./sections.js";
import type { SectionShots } from "./shots.js";

export { SECTIONS, type Section };

/** What a check read from the site. A section is absent when its page was not found or read. */
export interface Facts {
  pricing?: { url: string; plans: Plan[] };
  hiring?: { url: string; source: AtsVendor | "page"; jobs: JobPosting[] };
  content?: { url: string; items: ContentItem[] };
  messaging?: { url: string } & Messaging;
}

export interface Snapshot {
  takenAt: string;
  homepage: string;
  facts: Facts;
  /**
   * Sections copied from the previous snapshot because their page failed this time: a page that is
   * briefly down must not read as every plan or job having been removed.
   */
  carried: Section[];
  /** The screenshot of each section's page, by id (screenshots.ts); absent where none was taken. */
  screenshots?: SectionShots;
}

export type Fingerprints = Partial<Record<Section, string>>;

/**
 * A section reduced to what counts as a change: keyed, sorted (so reordering is no change), with
 * counters and dates masked in copy. Equal projections mean nothing changed in that section.
 */
function comparable(section: Section, facts: Facts): unknown {
  switch (section) {
    case "pricing":
      return facts.pricing?.plans
        .map((p) => [planKey(p.name), p.price, p.currency, p.period, p.perSeat, p.contactSales])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    case "hiring":
      return facts.hiring && [...new Set(facts.hiring.jobs.map(jobKey))].sort();
    case "content":
      return (
        facts.content && [...new Set(facts.content.items.map((i) => contentKey(i.url)))].sort()
      );
    case "messaging":
      return (
        facts.messaging && [
          maskNumbers(facts.messaging.headline ?? ""),
          [...new Set(facts.messaging.claims.map(maskNumbers))].sort(),
        ]
      );
  }
}

/** One hash per section present: kept on the competitor so an unchanged site costs no S3 read. */
export function fingerprints(facts: Facts): Fingerprints {
  const result: Fingerprints = {};
  for (const section of SECTIONS) {
    const value = comparable(section, facts);
    if (value !== undefined) {
      result[section] = createHash("sha256").update(JSON.stringify(value)).digest("base64url");
    }
  }
  return result;
}

export const competitorBlobPrefix = (workspaceId: string, competitorId: string) =>
  `ws/${workspaceId}/competitors/${competitorId}/`;

/** Where a competitor's snapshot history lives in its workspace's partition (history.ts). */
export const historyPrefix = (competitorId: string) => `SNAP#${competitorId}#`;

/** Snapshots in the bucket, one object per check that saw something new. */
export class Snapshots {
  constructor(private readonly blobs: Blobs) {}

  async save(workspaceId: string, competitorId: string, snapshot: Snapshot): Promise<string> {
    const key = `${competitorBlobPrefix(workspaceId, competitorId)}snapshots/${snapshot.takenAt}.json`;
    await this.blobs.putJson(key, snapshot);
    return key;
  }

  load(key: string): Promise<Snapshot | undefined> {
    return this.blobs.getJson<Snapshot>(key);
  }

  async remove(key: string): Promise<void> {
    await this.blobs.delete([key]);
  }

  async removeAll(workspaceId: string, competitorId: string): Promise<void> {
    await this.blobs.deletePrefix(competitorBlobPrefix(workspaceId, competitorId));
  }
}
