import { createModule } from "../http/app.js";
import { checkedUrl } from "../knowledge/sources/url-input.js";
import type { Quotas } from "../limits/quotas.js";
import type { CheckMessage, Queue } from "../store/queue.js";
import type { Checker } from "./check.js";
import { type Competitors, toPublic as publicCompetitor } from "./competitors.js";
import {
  checkAllCompetitors,
  checkCompetitor,
  createCompetitor,
  deleteCompetitor,
  getCompetitor,
  listCompetitors,
  listEvents,
  patchEvent,
} from "./contract.js";
import { normalizeDomain } from "./domain.js";
import { type Events, toPublic as publicEvent } from "./events.js";
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
}: CompetitorsRoutesDeps) {
  const app = createModule();

  app.openapi(createCompetitor, async (c) => {
    const { domain } = c.req.valid("json");
    // Refused as URL sources are: a literal private address or a local name is a 400 on `domain`.
    checkedUrl(`http://${normalizeDomain(domain).domain}/`, "domain", allowPrivate);
    const item = await competitors.create(c.get("workspaceId"), domain);
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

  app.openapi(deleteCompetitor, async (c) => {
    await competitors.delete(c.get("workspaceId"), c.req.valid("param").id);
    return c.body(null, 204);
  });

  app.openapi(checkCompetitor, async (c) => {
    const workspaceId = c.get("workspaceId");
    const { id } = c.req.valid("param");
    const result = await checker.check(workspaceId, id, () =>
      quotas.consume(workspaceId, "competitor_checks"),
    );
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

  return app;
}
