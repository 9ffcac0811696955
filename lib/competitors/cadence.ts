import { dueSlot, slotOf } from "../knowledge/sources/schedule.js";

/**
 * How often the sweep checks a competitor: every hour (a launch week), every day (the default) or
 * every week. Kept free of store imports so route schemas can use it.
 */
export const CADENCES = ["hourly", "daily", "weekly"] as const;
export type Cadence = (typeof CADENCES)[number];

export const DEFAULT_CADENCE: Cadence = "daily";

/** What the sweep needs to know of a competitor to tell whether it is due. */
export interface CadenceOf {
  competitorId: string;
  /** Absent on competitors tracked before cadences existed: they are daily. */
  cadence?: Cadence | undefined;
}

/**
 * Is the competitor due in the hour `at` falls in? The sweep runs hourly. A daily competitor has
 * one hour of the day and a weekly one one hour of the week, from a hash of its id (the slots
 * scheduled refreshes use, `../knowledge/sources/schedule.ts`), so a workspace's checks, and those
 * of a host many workspaces track, spread over the period instead of arriving together; the sweep
 * then spreads each hour's checks over its minutes (`capacity.ts`). An hourly competitor is due
 * every hour.
 */
export function isDue({ competitorId, cadence = DEFAULT_CADENCE }: CadenceOf, at: Date): boolean {
  if (cadence === "hourly") return true;
  return slotOf(competitorId, cadence) === dueSlot(cadence, at);
}
