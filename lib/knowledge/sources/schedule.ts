import { createHash } from "node:crypto";
import type { RefreshSchedule } from "./fields.js";

/**
 * Where scheduled refreshes wait: an item with a schedule (a URL source or a crawl) carries the
 * `gsi2` attributes below, in the partition of its slot. A daily schedule has 24 hourly slots, a
 * weekly one 168; an item's slot comes from a hash of its id, so a workspace's refreshes spread
 * over the window instead of all running at once. The hourly run reads only the slot now due.
 */
export const WINDOW_HOURS: Record<RefreshSchedule, number> = { daily: 24, weekly: 168 };

export const SCHEDULE_MARKER = ["gsi2pk", "gsi2sk"];

export const refreshPartition = (schedule: RefreshSchedule, slot: number) =>
  `REFRESH#${schedule}#${slot}`;

/** The item's hour in the schedule's window. */
export function slotOf(id: string, schedule: RefreshSchedule): number {
  const hash = createHash("sha256").update(id).digest();
  return hash.readUInt32BE(0) % WINDOW_HOURS[schedule];
}

/** The slot of the window that `at` falls in: the hour of the day, or of the week (UTC). */
export function dueSlot(schedule: RefreshSchedule, at: Date): number {
  const hourOfDay = at.getUTCHours();
  return schedule === "daily" ? hourOfDay : at.getUTCDay() * 24 + hourOfDay;
}

/** The `gsi2` attributes that put an item in its schedule's slot. */
export const refreshMarker = (workspaceId: string, id: string, schedule: RefreshSchedule) => ({
  gsi2pk: refreshPartition(schedule, slotOf(id, schedule)),
  gsi2sk: `${workspaceId}#${id}`,
});
