import { exportFile } from "../files/export-file.js";
import { createModule } from "../http/app.js";
import type { BrandProfiles } from "../intel/brand/profiles.js";
import { battlecard } from "./battlecard.js";
import { type Competitors, toPublic as publicCompetitor } from "./competitors.js";
import { competitorBattlecard } from "./contract.js";
import { type Events, toPublic as publicEvent } from "./events.js";
import type { Snapshots } from "./snapshot.js";
import { stateOf } from "./state.js";

/** The changes a battlecard lists: the latest, as many as fit a page sales reads in a call. */
const CARD_EVENTS = 10;

export interface BattlecardRoutesDeps {
  competitors: Competitors;
  events: Events;
  snapshots: Snapshots;
  /** The workspace's own plans and differentiators, set beside the competitor's. */
  brands: BrandProfiles;
}

/** A competitor's battlecard as a file: /api/intel/competitors/{id}/battlecard. */
export function battlecardRoutes({ competitors, events, snapshots, brands }: BattlecardRoutesDeps) {
  const app = createModule();

  app.openapi(competitorBattlecard, async (c) => {
    const workspaceId = c.get("workspaceId");
    // The key names the caller's workspace: another workspace's competitor is not found.
    const item = await competitors.get(workspaceId, c.req.valid("param").id);
    const [state, recent, brand] = await Promise.all([
      stateOf(item, snapshots),
      events.list(workspaceId, { competitorId: [item.id] }, CARD_EVENTS),
      brands.get(workspaceId),
    ]);
    const competitor = { ...publicCompetitor(item), ...state };
    const { body, headers } = await exportFile(
      `battlecard ${competitor.companyName ?? competitor.domain}`,
      battlecard(competitor, recent.items.map(publicEvent), brand),
      c.req.valid("query").format,
    );
    return c.body(body, 200, headers);
  });

  return app;
}
