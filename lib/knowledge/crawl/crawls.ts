import { conflict, notFound, serviceUnavailable } from "../../errors.js";
import { isId, newId } from "../../ids.js";
import type { QuotaCharge } from "../../limits/quotas.js";
import type { Page } from "../../store/table.js";
import { wsKey } from "../../store/table.js";
import type { RenderMode } from "../../web/render/renderer.js";
import type { ChunkingSettings, Metadata } from "../sources/attributes.js";
import type { RefreshSchedule } from "../sources/fields.js";
import { refreshMarker } from "../sources/schedule.js";
import {
  CrawlFrontier,
  type CrawlPageItem,
  type FrontierDeps,
  type PageStatus,
} from "./frontier.js";
import {
  type CrawlItem,
  type CrawlRecordDeps,
  CrawlRecords,
  type CrawlSettings,
  crawlKey,
} from "./records.js";

/** Seconds between watchdog checks of a running crawl. */
export const DEFAULT_WATCH_SECONDS = 300;

/** A crawl as the API shows it (camelCase, per the seed contract). */
export interface PublicCrawl extends Omit<CrawlSettings, "metadata" | "chunking" | "render"> {
  render: RenderMode;
  metadata: Metadata;
  chunking: ChunkingSettings;
  crawlId: string;
  status: CrawlItem["status"];
  pagesDiscovered: number;
  pagesIndexed: number;
  pagesFailed: number;
  pagesSkipped: number;
  startedAt: string;
  finishedAt: string | null;
  lastError: string | null;
  refresh: RefreshSchedule | null;
  refreshOf: string | null;
}

export interface PublicCrawlPage {
  url: string;
  status: PageStatus;
  reason: string | null;
  message: string | null;
  httpStatus: number | null;
  depth: number;
  sourceId: string | null;
  discoveredAt: string;
  updatedAt: string;
}

export function toPublicCrawl(item: CrawlItem): PublicCrawl {
  return {
    crawlId: item.crawlId,
    seedUrl: item.seedUrl,
    status: item.status,
    maxPages: item.maxPages,
    maxDepth: item.maxDepth,
    includeSubdomains: item.includeSubdomains,
    includePaths: item.includePaths,
    excludePaths: item.excludePaths,
    pagesDiscovered: item.pagesDiscovered,
    pagesIndexed: item.pagesIndexed,
    pagesFailed: item.pagesFailed,
    pagesSkipped: item.pagesSkipped,
    startedAt: item.startedAt,
    finishedAt: item.finishedAt,
    lastError: item.lastError,
    refresh: item.refresh ?? null,
    refreshOf: item.refreshOf ?? null,
    metadata: item.metadata ?? {},
    chunking: item.chunking ?? {},
    render: item.render ?? "auto",
  };
}

export function toPublicPage(item: CrawlPageItem): PublicCrawlPage {
  return {
    url: item.url,
    status: item.status,
    reason: item.reason,
    message: item.message,
    httpStatus: item.httpStatus,
    depth: item.depth,
    sourceId: item.status === "indexed" ? item.sourceId : null,
    discoveredAt: item.discoveredAt,
    updatedAt: item.updatedAt,
  };
}

/** Site crawls of one workspace, as the API starts, reads and cancels them. */
export class Crawls {
  private readonly records: CrawlRecords;
  private readonly frontier: CrawlFrontier;

  constructor(
    deps: CrawlRecordDeps & Pick<FrontierDeps, "queue"> & { watchSeconds?: number | undefined },
  ) {
    this.records = new CrawlRecords(deps);
    this.frontier = new CrawlFrontier({
      ...deps,
      watchSeconds: deps.watchSeconds ?? DEFAULT_WATCH_SECONDS,
      records: this.records,
    });
  }

  /**
   * Records a crawl and queues its seed page and its watchdog. `seedUrl` is canonical and checked;
   * `quota` is what the crawl was charged, returned in part when it ends.
   */
  async start(
    workspaceId: string,
    settings: CrawlSettings,
    quota?: QuotaCharge,
    schedule: Pick<CrawlItem, "refresh" | "refreshOf"> = {},
  ): Promise<CrawlItem> {
    const crawlId = newId("crawl");
    const now = new Date().toISOString();
    const crawl: CrawlItem = {
      pk: wsKey(workspaceId),
      sk: crawlKey(crawlId),
      workspaceId,
      crawlId,
      ...settings,
      status: "indexing",
      pagesDiscovered: 0,
      pagesIndexed: 0,
      pagesFailed: 0,
      pagesSkipped: 0,
      startedAt: now,
      finishedAt: null,
      updatedAt: now,
      lastError: null,
      ...(quota ? { quota } : {}),
      refresh: schedule.refresh ?? null,
      refreshOf: schedule.refreshOf ?? null,
      ...(schedule.refresh ? refreshMarker(workspaceId, crawlId, schedule.refresh) : {}),
    };
    await this.records.create(crawl);
    try {
      await this.frontier.discover(crawl, [{ url: settings.seedUrl, depth: 0 }]);
      await this.frontier.sendWatch(crawl);
    } catch {
      await this.records.end(crawl, "failed", "The crawl could not be queued; start it again");
      throw serviceUnavailable("The crawl could not be queued; try again", { crawlId });
    }
    return crawl;
  }

  async get(workspaceId: string, crawlId: string): Promise<CrawlItem> {
    const crawl = isId("crawl", crawlId) ? await this.records.get(workspaceId, crawlId) : undefined;
    if (!crawl) throw notFound("crawl", crawlId);
    return crawl;
  }

  /**
   * Sets or (null) removes a crawl's refresh schedule. A scheduled run has none of its own: its
   * schedule is the first crawl's.
   */
  async setRefresh(
    workspaceId: string,
    crawlId: string,
    schedule: RefreshSchedule | null,
  ): Promise<CrawlItem> {
    const crawl = await this.get(workspaceId, crawlId);
    if (crawl.refreshOf) {
      throw conflict(
        `This is a scheduled run of ${crawl.refreshOf}; change that crawl's schedule`,
        {
          refreshOf: crawl.refreshOf,
        },
      );
    }
    return this.records.schedule(crawl, schedule);
  }

  /** Records a scheduled crawl's latest run. */
  async noteRun(crawl: CrawlItem, runId: string): Promise<void> {
    await this.records.noteRun(crawl, runId);
  }

  /** A workspace's crawls, newest first. */
  list(workspaceId: string, limit: number, cursor?: string): Promise<Page<CrawlItem>> {
    return this.records.list(workspaceId, limit, cursor);
  }

  /** The per-URL report, in a stable order, optionally of some statuses only. */
  async pages(
    workspaceId: string,
    crawlId: string,
    status: readonly PageStatus[] | undefined,
    limit: number,
    cursor?: string,
  ): Promise<Page<CrawlPageItem>> {
    return this.frontier.listPages(await this.get(workspaceId, crawlId), status, limit, cursor);
  }

  /**
   * Stops a running crawl: pages still queued are skipped as `cancelled`; sources already created
   * stay. Cancelling a cancelled crawl answers it as it is; a finished one is a conflict.
   */
  async cancel(workspaceId: string, crawlId: string): Promise<CrawlItem> {
    const crawl = await this.get(workspaceId, crawlId);
    const ended =
      crawl.status === "indexing" ? await this.records.end(crawl, "cancelled", null) : undefined;
    const now = ended ?? (await this.get(workspaceId, crawlId));
    if (now.status !== "cancelled") {
      throw conflict(`The crawl has ${now.status} already`, { status: now.status });
    }
    return now;
  }
}
