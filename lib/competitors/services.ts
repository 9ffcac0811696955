import type { Caps } from "../limits/caps.js";
import type { Blobs } from "../store/blobs.js";
import type { Table } from "../store/table.js";
import type { SafeFetcher } from "../web/fetch.js";
import type { Renderer } from "../web/render/renderer.js";
import type { WebhookEvents } from "../webhooks/events.js";
import type { BriefWriter } from "./brief.js";
import { Checker, type CheckLimits } from "./check.js";
import { Competitors } from "./competitors.js";
import { Events } from "./events.js";
import type { AtsApis } from "./extract/ats.js";
import { SnapshotHistory } from "./history.js";
import type { PageReader } from "./page-reader.js";
import { AlertRules } from "./rules.js";
import { Screenshots } from "./screenshots.js";
import { SiteWatch } from "./site-watch.js";
import { Snapshots } from "./snapshot.js";

export interface CompetitorServiceDeps {
  table: Table;
  blobs: Blobs;
  fetcher: SafeFetcher;
  limits: CheckLimits;
  briefWriter?: BriefWriter;
  atsApis?: AtsApis;
  /** Where checks read fetched pages; the process's sandbox by default. */
  reader?: PageReader;
  /** Renders pages that need scripts; absent, such pages go unread. */
  renderer?: Renderer | undefined;
  /** Told `competitor.event` for each change event recorded. */
  webhooks?: WebhookEvents;
  /** The workspace caps (`MAX_COMPETITORS_PER_WORKSPACE`); the default limits when not given. */
  caps?: Caps;
  /** Days snapshots stay in a competitor's history (`SNAPSHOT_RETENTION_DAYS`); a year by default. */
  retentionDays?: number;
  /** The clock (epoch ms) checks date what they record by, and history keeps its retention by. */
  now?: () => number;
}

/** The competitor services over one table and bucket, wired to each other. */
export function createCompetitorServices(deps: CompetitorServiceDeps) {
  const snapshots = new Snapshots(deps.blobs);
  const competitors = new Competitors({ table: deps.table, snapshots, caps: deps.caps });
  const events = new Events(deps.table, deps.webhooks);
  const history = new SnapshotHistory(deps.table, deps.retentionDays, deps.now);
  const rules = new AlertRules(deps.table);
  const screenshots = new Screenshots(deps.blobs, deps.renderer);
  const checker = new Checker({
    competitors,
    events,
    snapshots,
    fetcher: deps.fetcher,
    limits: deps.limits,
    history,
    rules,
    screenshots,
    ...(deps.now ? { now: deps.now } : {}),
    siteWatch: new SiteWatch(deps.blobs),
    ...(deps.atsApis ? { atsApis: deps.atsApis } : {}),
    ...(deps.briefWriter ? { briefWriter: deps.briefWriter } : {}),
    ...(deps.reader ? { reader: deps.reader } : {}),
    renderer: deps.renderer,
  });
  return { snapshots, competitors, events, checker, history, rules, screenshots };
}

export type CompetitorServices = ReturnType<typeof createCompetitorServices>;
