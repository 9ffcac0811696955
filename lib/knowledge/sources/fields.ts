/**
 * The enumerated fields of a knowledge source. Kept free of imports so route schemas can use
 * them without pulling in the stores.
 */

/** `awaiting_upload`: a presigned upload's file has not arrived yet (see uploads.ts). */
export const SOURCE_STATUSES = ["awaiting_upload", "indexing", "indexed", "failed"] as const;
export type SourceStatus = (typeof SOURCE_STATUSES)[number];

export const SOURCE_TYPES = ["text", "url", "file"] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

/** How often a URL source or a crawl is fetched again by itself. */
export const REFRESH_SCHEDULES = ["daily", "weekly"] as const;
export type RefreshSchedule = (typeof REFRESH_SCHEDULES)[number];
