import { createServer } from "node:net";
import type { BriefWriter } from "../../lib/competitors/brief.js";
import type { CheckLimits } from "../../lib/competitors/check.js";
import { type CompetitorEvent, toPublic } from "../../lib/competitors/events.js";
import type { PageReader } from "../../lib/competitors/page-reader.js";
import { createCompetitorServices } from "../../lib/competitors/services.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { startAws, type TestAws } from "../support/aws.js";
import { type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";

/** No politeness delay: the fixture site is ours, and tests never wait on the clock. */
export const TEST_LIMITS: CheckLimits = {
  maxFetches: 15,
  budgetMs: 20_000,
  politenessMs: 0,
  requestTimeoutMs: 5_000,
};

/** The real safe fetcher, allowed onto loopback where the fixture site lives. */
export const fixtureFetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 5_000 });

export interface World {
  aws: TestAws;
  site: CompetitorSite;
  services: ReturnType<typeof createCompetitorServices>;
  /** The fixture site's host and port: what a user would type as the domain. */
  host: string;
  close(): Promise<void>;
}

export function servicesFor(
  aws: TestAws,
  site: CompetitorSite,
  options: { briefWriter?: BriefWriter; limits?: CheckLimits; reader?: PageReader } = {},
) {
  return createCompetitorServices({
    table: aws.table,
    blobs: aws.blobs,
    fetcher: fixtureFetcher,
    limits: options.limits ?? TEST_LIMITS,
    // The job board's API is served by the fixture site too.
    atsApis: { greenhouse: site.origin, lever: site.origin, ashby: site.origin },
    ...(options.briefWriter ? { briefWriter: options.briefWriter } : {}),
    ...(options.reader ? { reader: options.reader } : {}),
  });
}

export async function startWorld(): Promise<World> {
  const [aws, site] = await Promise.all([startAws(), startCompetitorSite()]);
  return {
    aws,
    site,
    services: servicesFor(aws, site),
    host: new URL(site.origin).host,
    async close() {
      await Promise.all([aws.close(), site.close()]);
    },
  };
}

/** Follows a workspace's event list: each call answers the events recorded since the last. */
export function eventFeed(world: World, workspaceId: string) {
  const seen = new Set<string>();
  return async (): Promise<CompetitorEvent[]> => {
    const page = await world.services.events.list(workspaceId, {}, 100);
    const fresh = page.items.filter((event) => !seen.has(event.id)).map(toPublic);
    for (const event of fresh) seen.add(event.id);
    return fresh;
  };
}

/** A port nothing listens on: a competitor whose site is down. */
export const closedPort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
