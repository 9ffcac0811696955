import { oneLine } from "./mail-message.js";

/**
 * Email digests: which endpoints are due at a given hour, and what a digest says. A digest is
 * the period's competitor events, grouped by competitor (the one with the most severe event
 * first), each group's events by severity then newest first, with the typed change's numbers.
 */
export const DIGESTS = ["daily", "weekly"] as const;
export type Digest = (typeof DIGESTS)[number];

/** The event type a digest delivery carries; its data is the period (`since`, `until`). */
export const DIGEST_EVENT_TYPE = "competitor.digest";

const HOUR_MS = 3_600_000;
const PERIOD_MS: Record<Digest, number> = { daily: 24 * HOUR_MS, weekly: 7 * 24 * HOUR_MS };

/**
 * The period a digest sent at `at` covers, or null when it is not due then: daily digests are due
 * at `hour` (UTC) each day, weekly ones at that hour on Mondays. The period ends at the hour's
 * start, whatever minute the schedule ran, so a late or repeated run covers the same period.
 */
export function digestPeriod(
  digest: Digest,
  at: Date,
  hour: number,
): { since: string; until: string } | null {
  if (at.getUTCHours() !== hour) return null;
  if (digest === "weekly" && at.getUTCDay() !== 1) return null;
  const until = Math.floor(at.getTime() / HOUR_MS) * HOUR_MS;
  return {
    since: new Date(until - PERIOD_MS[digest]).toISOString(),
    until: new Date(until).toISOString(),
  };
}

/** The id of one endpoint's digest of one period: the same however often it is queued. */
export const digestEventId = (endpointId: string, until: string) =>
  `digest_${endpointId}_${until.replace(/[^0-9]/g, "").slice(0, 12)}`;

/** What a digest reads of an event: the public event's fields it shows. */
export interface DigestEvent {
  id: string;
  competitorId: string;
  competitorDomain: string;
  severity: "low" | "medium" | "high" | "critical";
  title: string;
  detectedAt: string;
  change: {
    kind: string;
    subject: string;
    url: string | null;
    before: { amount?: number | null; currency?: string | null } | null;
    after: { amount?: number | null; currency?: string | null } | null;
    percentChange: number | null;
  };
}

/**
 * The competitor events of a workspace detected in [since, until), newest first, at most
 * `limit`, and whether more were detected.
 */
export type DigestSource = (
  workspaceId: string,
  period: { since: string; until: string },
  limit: number,
) => Promise<{ events: DigestEvent[]; more: boolean }>;

/** Events one digest lists at most; past them it points at the events feed. */
export const MAX_DIGEST_EVENTS = 200;

const SEVERITY_ORDER = ["critical", "high", "medium", "low"];
const rank = (e: DigestEvent) => SEVERITY_ORDER.indexOf(e.severity);

export interface CompetitorGroup {
  competitor: string;
  events: DigestEvent[];
}

/** Groups by competitor: the most severe first (then most events, then name). */
export function groupEvents(events: DigestEvent[]): CompetitorGroup[] {
  const groups = new Map<string, DigestEvent[]>();
  for (const event of events) {
    groups.set(event.competitorId, [...(groups.get(event.competitorId) ?? []), event]);
  }
  const sorted = [...groups.values()].map((list) =>
    list.sort((a, b) => rank(a) - rank(b) || b.detectedAt.localeCompare(a.detectedAt)),
  );
  const worst = (list: DigestEvent[]) => rank(list[0] as DigestEvent);
  return sorted
    .sort(
      (a, b) =>
        worst(a) - worst(b) ||
        b.length - a.length ||
        (a[0]?.competitorDomain ?? "").localeCompare(b[0]?.competitorDomain ?? ""),
    )
    .map((list) => ({ competitor: list[0]?.competitorDomain ?? "", events: list }));
}

const money = (side: { amount?: number | null; currency?: string | null } | null) =>
  side && typeof side.amount === "number" ? `${side.currency ?? ""} ${side.amount}`.trim() : null;

/** The typed change's numbers: `Pro: USD 29 → USD 49 (+69%)`, or its kind and subject. */
export function changeLine(change: DigestEvent["change"]): string {
  const before = money(change.before);
  const after = money(change.after);
  const percent =
    change.percentChange === null
      ? ""
      : ` (${change.percentChange > 0 ? "+" : ""}${change.percentChange}%)`;
  const values = before || after ? `: ${before ?? "–"} → ${after ?? "–"}` : "";
  return `${change.kind.replaceAll("_", " ")} · ${change.subject}${values}${percent}`;
}

const escapeHtml = (text: string) =>
  text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");

/** The event in the console: the competitors screen, opened at the event. */
const eventLink = (consoleUrl: string | undefined, id: string) =>
  consoleUrl ? new URL(`#/competitors?event=${encodeURIComponent(id)}`, consoleUrl).href : null;

export interface RenderedDigest {
  subject: string;
  text: string;
  html: string;
}

/** The digest's subject, text and HTML; page text is escaped out of the HTML. */
export function renderDigest(
  input: {
    digest: Digest;
    period: { since: string; until: string };
    events: DigestEvent[];
    /** More events were detected than the digest lists. */
    more: boolean;
    label: string | null;
  },
  consoleUrl?: string,
): RenderedDigest {
  const groups = groupEvents(input.events);
  const total = `${input.events.length}${input.more ? "+" : ""}`;
  const critical = input.events.filter((e) => e.severity === "critical").length;
  const day = (iso: string) => iso.slice(0, 10);
  const span = `${day(input.period.since)} to ${day(input.period.until)}`;
  const label = input.label ? `[${oneLine(input.label)}] ` : "";
  const names = groups
    .slice(0, 3)
    .map((g) => g.competitor)
    .join(", ");
  const subject = oneLine(
    `${label}Your ${input.digest} competitor digest: ${total} change${total === "1" ? "" : "s"}${
      critical > 0 ? `, ${critical} critical` : ""
    }${names ? ` (${names}${groups.length > 3 ? ", …" : ""})` : ""}`,
  );
  const text: string[] = [`Competitor changes from ${span} (UTC).`, ""];
  const html: string[] = [`<p>Competitor changes from ${escapeHtml(span)} (UTC).</p>`];
  if (groups.length === 0) {
    text.push("No competitor changed in this period.");
    html.push("<p>No competitor changed in this period.</p>");
  }
  for (const group of groups) {
    text.push(group.competitor, "-".repeat(group.competitor.length));
    html.push(`<h2>${escapeHtml(group.competitor)}</h2>`, "<ul>");
    for (const event of group.events) {
      const link = eventLink(consoleUrl, event.id);
      const line = changeLine(event.change);
      text.push(`[${event.severity}] ${event.title}`, `  ${line}`);
      if (link) text.push(`  ${link}`);
      const title = link
        ? `<a href="${escapeHtml(link)}">${escapeHtml(event.title)}</a>`
        : escapeHtml(event.title);
      html.push(
        `<li><strong>[${event.severity}]</strong> ${title}<br><small>${escapeHtml(line)}</small></li>`,
      );
    }
    text.push("");
    html.push("</ul>");
  }
  if (input.more) {
    text.push("And more changes: see the events feed.");
    html.push("<p>And more changes: see the events feed.</p>");
  }
  return {
    subject,
    text: text.join("\n"),
    html: `<!doctype html><html><body>${html.join("\n")}</body></html>`,
  };
}
