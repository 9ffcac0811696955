import { isId, newId } from "../ids.js";
import { logger } from "../log.js";
import type { Blobs } from "../store/blobs.js";
import { contentTypeHeader } from "../web/content-type.js";
import type { Renderer } from "../web/render/renderer.js";
import type { EventDraft } from "./events.js";
import type { CheckSession } from "./session.js";
import type { SectionShots } from "./shots.js";
import { competitorBlobPrefix, type Facts, SECTIONS, type Snapshot } from "./snapshot.js";

/**
 * Screenshots as a check's evidence: when a check keeps a new snapshot, the page each section was
 * read from this time is kept as a JPEG (the top 3000 px, 600 KB at most: browser.ts) beside the
 * competitor's snapshots, and each event links the shot of its section's page in the snapshot
 * before and in this one. A page the check rendered gives its shot for free; a page read as
 * the server sent it is rendered once more for its shot alone, only where a browser is available
 * and while the check's reading budget lasts. Without a browser there are no shots and checks
 * run as before: an event's screenshots are then null.
 *
 * Shots live under the workspace's prefix (`ws/{workspaceId}/`), so erasing the workspace or
 * deleting the competitor removes them; they carry the tag `SCREENSHOT_TAGS`, by which the
 * bucket's lifecycle expires them after `SNAPSHOT_RETENTION_DAYS`, as the history's snapshots
 * they show expire from the table (infra/aws/constructs/storage.ts).
 */

/** The S3 tag the bucket's lifecycle rule expires screenshots by. */
export const SCREENSHOT_TAGS = { retention: "competitor-screenshot" } as const;

/** Below this much time left of the check's budget, no page is rendered for its shot alone. */
const MIN_SHOT_MS = 2_000;

export const screenshotKey = (workspaceId: string, competitorId: string, shotId: string) =>
  `${competitorBlobPrefix(workspaceId, competitorId)}screenshots/${shotId}.jpg`;

/** The drafts, each with the shots of its section's page in the snapshot before and now. */
export function withShots(
  drafts: EventDraft[],
  before: SectionShots | undefined,
  after: SectionShots | undefined,
): EventDraft[] {
  if (!after) return drafts;
  return drafts.map((draft) => ({
    ...draft,
    screenshots: { before: before?.[draft.type] ?? null, after: after[draft.type] ?? null },
  }));
}

export class Screenshots {
  constructor(
    private readonly blobs: Blobs,
    /** Renders pages read as sent, for their shot; absent, only rendered pages have one. */
    private readonly renderer?: Renderer | undefined,
  ) {}

  /**
   * Keeps a shot of each page the check read a section from (`fresh`); sections it did not read
   * keep the shot `previous` had. A page that gives no shot (not HTML, no browser, no time left,
   * the render failed) leaves its section without one.
   */
  async capture(
    item: { workspaceId: string; id: string },
    session: CheckSession,
    fresh: Facts,
    previous: Snapshot | undefined,
    deadline: number,
  ): Promise<SectionShots> {
    const shots: SectionShots = {};
    // One page may give several sections (the homepage's messaging and posts): one shot.
    const byUrl = new Map<string, Promise<string | undefined>>();
    for (const section of SECTIONS) {
      const url = fresh[section]?.url;
      if (!url) {
        const kept = previous?.screenshots?.[section];
        if (kept) shots[section] = kept;
        continue;
      }
      let stored = byUrl.get(url);
      if (!stored) {
        stored = this.shotOf(session, url, deadline).then(
          (jpeg) => jpeg && this.save(item.workspaceId, item.id, jpeg),
        );
        byUrl.set(url, stored);
      }
      const id = await stored;
      if (id) shots[section] = id;
    }
    return shots;
  }

  /** The JPEG, or undefined for an unknown id or one of another workspace or competitor. */
  async get(workspaceId: string, competitorId: string, shotId: string) {
    if (!isId("screenshot", shotId)) return undefined;
    return this.blobs.get(screenshotKey(workspaceId, competitorId, shotId));
  }

  private async save(workspaceId: string, competitorId: string, jpeg: Buffer): Promise<string> {
    const id = newId("screenshot");
    await this.blobs.put(
      screenshotKey(workspaceId, competitorId, id),
      jpeg,
      "image/jpeg",
      SCREENSHOT_TAGS,
    );
    return id;
  }

  private async shotOf(
    session: CheckSession,
    url: string,
    deadline: number,
  ): Promise<Buffer | undefined> {
    const read = session.pages.get(url);
    if (!read) return undefined;
    if (read.shot) return read.shot;
    const left = deadline - Date.now();
    if (!this.renderer || left < MIN_SHOT_MS) return undefined;
    try {
      const rendered = await this.renderer.render({
        url,
        document: { body: read.page.body, contentType: contentTypeHeader(read.page) },
        screenshot: true,
        timeoutMs: left,
      });
      return rendered.screenshot;
    } catch (err) {
      logger.warn("no screenshot of a competitor's page", { url, error: err });
      return undefined;
    }
  }
}
