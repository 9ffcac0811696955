import { notFound } from "../errors.js";
import { createModule } from "../http/app.js";
import { checkedUrl } from "../knowledge/sources/url-input.js";
import type { QuotaCharge, Quotas } from "../limits/quotas.js";
import type { CheckMessage, Queue } from "../store/queue.js";
import type { Checker } from "./check.js";
import { type Competitors, toPublic as publicCompetitor } from "./competitors.js";
import {
  checkAllCompetitors,
  checkCompetitor,
  competitorHistory,
  competitorPrices,
  competitorScreenshot,
  createAlertRule,
  createCompetitor,
  deleteAlertRule,
  deleteCompetitor,
  getCompetitor,
  listAlertRules,
  listCompetitors,
  listEvents,
  patchEvent,
  testAlertRule,
  updateCompetitor,
} from "./contract.js";
import { normalizeDomain } from "./domain.js";
import { type Events, toPublic as publicEvent } from "./events.js";
import type { SnapshotHistory } from "./history.js";
import { type AlertRules, ruleMatches } from "./rules.js";
import type { Screenshots } from "./screenshots.js";
import type { Snapshots } from "./snapshot.js";
import { stateOf } from "./state.js";
import { enqueueWorkspace } from "./sweep.js";

export interface CompetitorsRoutesDeps {
  competitors: Competitors;
  events: Events;
  /** Where the latest snapshot of each competitor is read. */
  snapshots: Snapshots;
  /** Runs `POST .../check`; give it limits that fit the API's time budget (`API_CHECK_LIMITS`). */
  checker: Checker;
  /** Takes each check, queued or direct, from the workspace's daily quota. */
  quotas: Quotas;
  /** Where `check-all` queues checks: the checks worker's queue. */
  checksQueue: Queue<CheckMessage>;
  /** ALLOW_PRIVATE_URLS: lets competitors be loopback and private hosts (development and tests). */
  allowPrivate: boolean;
  /** Each competitor's snapshots over time and its price series. */
  history: SnapshotHistory;
  /** The workspace's alert rules. */
  rules: AlertRules;
  /** The screenshots checks keep of competitors' pages. */
  screenshots: Screenshots;
}

/** Competitor tracking, checks and change events: /api/intel/competitors/*, /api/intel/events/* */
export function competitorsRoutes({
  competitors,
  events,
  snapshots,
  checker,
  checksQueue,
  quotas,
  allowPrivate,
  history,
  rules,
  screenshots,
}: CompetitorsRoutesDeps) {
  const app = createModule();

  app.openapi(createCompetitor, async (c) => {
    const { domain, cadence, render } = c.req.valid("json");
    // Refused as URL sources are: a literal private address or a local name is a 400 on `domain`.
    checkedUrl(`http://${normalizeDomain(domain).domain}/`, "domain", allowPrivate);
    const item = await competitors.create(c.get("workspaceId"), domain, cadence, render);
    return c.json(publicCompetitor(item), 201);
  });

  app.openapi(listCompetitors, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const page = await competitors.list(c.get("workspaceId"), limit, cursor);
    return c.json(
      { competitors: page.items.map(publicCompetitor), nextCursor: page.nextCursor },
      200,
    );
  });

  // Registered before `{id}` routes so `check-all` is never read as an id.
  app.openapi(checkAllCompetitors, async (c) => {
    const workspaceId = c.get("workspaceId");
    const queued = await enqueueWorkspace(competitors, checksQueue, workspaceId, (count) =>
      quotas.consume(workspaceId, "competitor_checks", count),
    );
    return c.json({ queued }, 202);
  });

  app.openapi(getCompetitor, async (c) => {
    const item = await competitors.get(c.get("workspaceId"), c.req.valid("param").id);
    return c.json({ ...publicCompetitor(item), ...(await stateOf(item, snapshots)) }, 200);
  });

  app.openapi(updateCompetitor, async (c) => {
    const { cadence } = c.req.valid("json");
    const item = await competitors.setCadence(
      c.get("workspaceId"),
      c.req.valid("param").id,
      cadence,
    );
    return c.json(publicCompetitor(item), 200);
  });

  app.openapi(deleteCompetitor, async (c) => {
    await competitors.delete(c.get("workspaceId"), c.req.valid("param").id);
    return c.body(null, 204);
  });

  app.openapi(checkCompetitor, async (c) => {
    const workspaceId = c.get("workspaceId");
    const { id } = c.req.valid("param");
    let charge: QuotaCharge | undefined;
    const { blocked, ...result } = await checker.check(workspaceId, id, async () => {
      charge = await quotas.consume(workspaceId, "competitor_checks");
    });
    // A site behind a wall was not checked: the check is not counted.
    if (blocked && charge) await quotas.refund(workspaceId, charge);
    return c.json({ result }, 200);
  });

  app.openapi(listEvents, async (c) => {
    const { limit, cursor, ...filter } = c.req.valid("query");
    const page = await events.list(c.get("workspaceId"), filter, limit, cursor);
    return c.json({ events: page.items.map(publicEvent), nextCursor: page.nextCursor }, 200);
  });

  app.openapi(patchEvent, async (c) => {
    const event = await events.update(
      c.get("workspaceId"),
      c.req.valid("param").id,
      c.req.valid("json"),
    );
    return c.json(event, 200);
  });

  app.openapi(competitorHistory, async (c) => {
    const workspaceId = c.get("workspaceId");
    const item = await competitors.get(workspaceId, c.req.valid("param").id);
    const page = await history.list(workspaceId, item.id, c.req.valid("query"));
    return c.json({ snapshots: page.items, nextCursor: page.nextCursor }, 200);
  });

  app.openapi(competitorPrices, async (c) => {
    const workspaceId = c.get("workspaceId");
    const item = await competitors.get(workspaceId, c.req.valid("param").id);
    return c.json({ plans: await history.prices(workspaceId, item.id) }, 200);
  });

  app.openapi(competitorScreenshot, async (c) => {
    const { id, shotId } = c.req.valid("param");
    // The key names the caller's workspace: another workspace's shot is not found.
    const jpeg = await screenshots.get(c.get("workspaceId"), id, shotId);
    if (!jpeg) throw notFound("screenshot", shotId);
    // Copied into a buffer of its own, the body type Hono takes (600 KB at most).
    return c.body(new Uint8Array(jpeg), 200, {
      "content-type": "image/jpeg",
      // A shot never changes once kept; only its workspace's callers may see it.
      "cache-control": "private, max-age=86400, immutable",
    });
  });

  app.openapi(listAlertRules, async (c) => {
    return c.json({ rules: await rules.list(c.get("workspaceId")) }, 200);
  });

  // Registered before `{id}` routes so `test` is never read as an id.
  app.openapi(testAlertRule, async (c) => {
    const { rule, limit } = c.req.valid("json");
    const page = await events.list(c.get("workspaceId"), {}, limit);
    const recent = page.items.map(publicEvent);
    const matched = recent.filter((event) => ruleMatches(rule, event));
    return c.json({ checked: recent.length, matched }, 200);
  });

  app.openapi(createAlertRule, async (c) => {
    const workspaceId = c.get("workspaceId");
    const input = c.req.valid("json");
    // A rule naming a competitor of another workspace, or none, would never match: refused.
    if (input.competitorId !== null) await competitors.get(workspaceId, input.competitorId);
    return c.json(await rules.create(workspaceId, input), 201);
  });

  app.openapi(deleteAlertRule, async (c) => {
    await rules.delete(c.get("workspaceId"), c.req.valid("param").id);
    return c.body(null, 204);
  });

  return app;
}
