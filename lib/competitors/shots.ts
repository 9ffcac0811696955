import type { Section } from "./sections.js";

/**
 * How snapshots and events name their screenshots (kept and served by `screenshots.ts`): ids
 * only, so the records that hold them need nothing of the code that takes them.
 */

/** Each section's page, by screenshot id, as a snapshot keeps them. */
export type SectionShots = Partial<Record<Section, string>>;

/** An event's screenshots by id: its section's page before the change and after it. */
export interface EventShots {
  before: string | null;
  after: string | null;
}

/** Where the API serves a screenshot to its workspace (`GET .../screenshots/{shotId}`). */
const screenshotUrl = (competitorId: string, shotId: string | null) =>
  shotId && `/api/intel/competitors/${competitorId}/screenshots/${shotId}`;

/** An event's screenshots as the API shows them: URLs, null where there is no shot. */
export function linkedShots(competitorId: string, shots: EventShots | undefined) {
  return {
    before: screenshotUrl(competitorId, shots?.before ?? null),
    after: screenshotUrl(competitorId, shots?.after ?? null),
  };
}
