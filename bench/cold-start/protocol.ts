/** What the cold-start probe (a fresh process) and the figure that spawns it agree on. */

/** Times in ms since this process started (`performance.timeOrigin`). */
export interface ProbeResult {
  /** Node has booted and loaded this probe. */
  bootMs: number;
  /** The bundle is imported: its module scope (config, clients, app) has run. */
  loadedMs: number;
  /** The handler has answered the event. */
  answeredMs: number;
  ok: boolean;
  /** The answer in a few words: an HTTP status, failed records, or the error. */
  detail: string;
}

/** The probe's `detail` when it was given no event and only loaded the bundle. */
export const NOT_INVOKED = "not invoked";
