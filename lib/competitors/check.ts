import { mapLimit } from "../async.js";
import { toDisplayText } from "../display-text.js";
import { logger } from "../log.js";
import { count } from "../metrics.js";
import type { SafeFetcher } from "../web/fetch.js";
import { HostPace } from "../web/session.js";
import { type BriefInput, type BriefWriter, summarize, titleOf } from "./brief.js";
import type { CompetitorItem, Competitors, PagesSeen } from "./competitors.js";
import { type Change, diffFacts } from "./diff.js";
import { homepageCandidates } from "./domain.js";
import { detailsOf, type EventDraft, type Events } from "./events.js";
import { type AtsApis, PUBLIC_ATS_APIS } from "./extract/ats.js";
import { observe } from "./observe.js";
import { type PageReader, pageReader } from "./page-reader.js";
import { CheckSession } from "./session.js";
import { severityOf } from "./severity.js";
import {
  type Facts,
  type Fingerprints,
  fingerprints,
  SECTIONS,
  type Section,
  type Snapshot,
  type Snapshots,
} from "./snapshot.js";
import { summarizeCheck } from "./summary.js";

export interface CheckLimits {
  /** Requests per check, robots.txt files included. */
  maxFetches: number;
  /** Time a check may spend reading the site. */
  budgetMs: number;
  /** Least time between two requests to one host. */
  politenessMs: number;
  /** Longest single request. */
  requestTimeoutMs: number;
}

/**
 * Fits `POST .../check` in API Gateway's 29 s: reading stops after 18 s, briefs take 5 s more at
 * most, and storage the rest.
 */
export const API_CHECK_LIMITS: CheckLimits = {
  maxFetches: 15,
  budgetMs: 18_000,
  politenessMs: 250,
  requestTimeoutMs: 8_000,
};

export interface CheckerDeps {
  competitors: Competitors;
  events: Events;
  snapshots: Snapshots;
  fetcher: SafeFetcher;
  limits: CheckLimits;
  /** Where the job boards' public APIs are; the vendors' own by default. */
  atsApis?: AtsApis;
  briefWriter?: BriefWriter;
  /** Where fetched pages are read; the process's sandbox within PAGE_BOUNDS by default. */
  reader?: PageReader;
}

export interface CheckResult {
  /** False when the site could not be read; `summary` says why. */
  ok: boolean;
  /** True when change events were recorded. */
  changed: boolean;
  summary: string;
}

/** All briefs of one check share this much time; late ones fall back to the deterministic text. */
const BRIEF_BUDGET_MS = 5_000;
const BRIEF_CONCURRENCY = 4;
/** A crashed check's lease runs out this long after its budget, freeing the competitor. */
const LEASE_MARGIN_MS = 60_000;

/** When each section's page was last read: those read now, now; the others as they were. */
function pagesSeen(before: PagesSeen | undefined, facts: Facts, at: string): PagesSeen {
  const seen: PagesSeen = { ...before };
  for (const section of SECTIONS) {
    const url = facts[section]?.url;
    if (url) seen[section] = { url, lastSeenAt: at };
  }
  return seen;
}

const sameFingerprints = (a: Fingerprints, b: Fingerprints) =>
  SECTIONS.every((section) => a[section] === b[section]);

/** Sections the site did not yield this time keep their last known state. */
function carryOver(fresh: Facts, previous: Snapshot | undefined) {
  const facts: Facts = { ...fresh };
  const carried: Section[] = [];
  for (const section of SECTIONS) {
    const before = previous?.facts[section];
    if (!facts[section] && before) {
      Object.assign(facts, { [section]: before });
      carried.push(section);
    }
  }
  return { facts, carried };
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Checks a competitor's site for changes: reads it within a budget, compares what it found with the
 * last snapshot section by section, records one event per real change, and keeps the new snapshot.
 */
export class Checker {
  /** Checks running at once take turns at a host they share (a job board's API, a domain). */
  private readonly pace = new HostPace();

  constructor(private readonly deps: CheckerDeps) {}

  /**
   * The longest a check holds its competitor: its budget, then briefs and storage within the
   * margin. Past it the competitor's lease ends, so a crashed check never holds it longer.
   */
  boundMs(): number {
    return this.deps.limits.budgetMs + LEASE_MARGIN_MS;
  }

  /** `not_found` for an unknown competitor, `conflict` while another check of it runs. */
  /** `reserve` runs once the check holds the competitor, before any request (a quota). */
  async check(
    workspaceId: string,
    competitorId: string,
    reserve: () => Promise<unknown> = async () => undefined,
  ): Promise<CheckResult> {
    const { competitors, limits } = this.deps;
    const started = Date.now();
    const until = started + this.boundMs();
    const item = await competitors.lease(workspaceId, competitorId, started, until);
    try {
      await reserve();
      const result = await this.run(item, started + limits.budgetMs);
      count(result.ok ? "CompetitorChecks" : "CompetitorChecksFailed");
      return result;
    } catch (err) {
      // Frees the competitor without marking it checked, so a retry runs in full.
      await competitors.release(item).catch(() => undefined);
      throw err;
    }
  }

  private async run(item: CompetitorItem, deadline: number): Promise<CheckResult> {
    const { competitors, snapshots, limits } = this.deps;
    const session = new CheckSession(this.deps.fetcher, { ...limits, deadline, pace: this.pace });
    const observation = await observe(
      { session, read: this.deps.reader ?? pageReader() },
      homepageCandidates(item),
      this.deps.atsApis ?? PUBLIC_ATS_APIS,
    );
    const checkedAt = new Date().toISOString();
    if (!observation.ok) {
      await competitors.release(item, { lastCheckedAt: checkedAt });
      const summary = `${item.domain} could not be checked: ${observation.reason}`;
      return { ok: false, changed: false, summary };
    }
    const done = {
      lastCheckedAt: checkedAt,
      lastAnalyzedAt: checkedAt,
      companyName: observation.name ?? item.companyName ?? null,
      pages: pagesSeen(item.pages, observation.facts, checkedAt),
    };
    if (item.snapshotKey && sameFingerprints(fingerprints(observation.facts), item.fingerprints)) {
      await competitors.release(item, done);
      const summary = summarizeCheck({ domain: item.domain, baseline: false, changes: [] });
      return { ok: true, changed: false, summary };
    }
    const previous = item.snapshotKey ? await snapshots.load(item.snapshotKey) : undefined;
    const { facts, carried } = carryOver(observation.facts, previous);
    const changes = previous ? diffFacts(previous.facts, facts) : [];
    // Events go first: should the check die before the snapshot is kept, the retry reports the
    // change again rather than never.
    const events = await this.deps.events.record(
      item.workspaceId,
      await this.drafts(item, changes),
      checkedAt,
    );
    const prints = fingerprints(facts);
    if (previous && sameFingerprints(prints, item.fingerprints)) {
      await competitors.release(item, done);
    } else {
      const snapshot: Snapshot = {
        takenAt: checkedAt,
        homepage: observation.homepage,
        facts,
        carried,
      };
      const key = await snapshots.save(item.workspaceId, item.id, snapshot);
      const kept = await competitors.release(item, {
        ...done,
        snapshotKey: key,
        fingerprints: prints,
      });
      if (!kept) await snapshots.remove(key);
    }
    const summary = summarizeCheck({
      domain: item.domain,
      baseline: !previous,
      changes,
      facts,
      carried,
      firstSeen: previous ? SECTIONS.filter((s) => facts[s] && !previous.facts[s]) : [],
    });
    return { ok: true, changed: events.length > 0, summary };
  }

  private drafts(item: CompetitorItem, changes: Change[]): Promise<EventDraft[]> {
    const briefsEnd = Date.now() + BRIEF_BUDGET_MS;
    return mapLimit(changes, BRIEF_CONCURRENCY, async (change) => {
      const severity = severityOf(change);
      // Built from the competitor's own pages: shown as a label, so made a display string.
      const title = toDisplayText(titleOf(change)) || "Site changed";
      const summary = summarize(change, item.domain);
      const input = {
        workspaceId: item.workspaceId,
        competitor: { id: item.id, domain: item.domain },
        change,
        severity,
        title,
        summary,
      };
      return {
        competitorId: item.id,
        competitorDomain: item.domain,
        type: change.type,
        severity,
        title,
        aiBrief: await this.brief(input, briefsEnd - Date.now()),
        details: detailsOf(change),
      };
    });
  }

  private async brief(input: BriefInput, timeoutMs: number): Promise<string> {
    const writer = this.deps.briefWriter;
    if (!writer || timeoutMs <= 0) return input.summary;
    try {
      const signal = AbortSignal.timeout(timeoutMs);
      const text = await withTimeout(writer(input, { signal }), timeoutMs);
      return text.trim() || input.summary;
    } catch (err) {
      logger.warn("brief writer failed; using the deterministic brief", { error: err });
      return input.summary;
    }
  }
}
