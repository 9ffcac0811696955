import { notFound } from "../errors.js";
import { isId, newId } from "../ids.js";
import { type Item, type Page, type Table, wsKey } from "../store/table.js";
import type { WebhookEvents } from "../webhooks/events.js";
import { CHANGE_KINDS, type TypedChange } from "./changes.js";
import type { Change, ChangeKind } from "./diff.js";
import { SECTIONS, type Section } from "./sections.js";
import { bySeverity, type Severity } from "./severity.js";
import { type EventShots, linkedShots } from "./shots.js";

export type EventType = Section;
export const EVENT_TYPES: readonly EventType[] = SECTIONS;

/** What changed, with the values before and after: the untyped form `change` supersedes. */
export interface EventDetails {
  /** The kind; events recorded before typed changes hold the older names (`LEGACY_KINDS`). */
  change: string;
  subject: string;
  before: unknown;
  after: unknown;
  url: string | null;
  /** Price moves: the move in percent (null from a free plan). */
  percent?: number | null;
  /** Closed postings: teams left with no opening. */
  closedTeams?: string[];
}

/** A detected change of a competitor, as the API shows it. */
export interface CompetitorEvent {
  id: string;
  competitorId: string;
  /** Kept on the event so it still reads well after the competitor is deleted. */
  competitorDomain: string;
  type: EventType;
  severity: Severity;
  title: string;
  aiBrief: string;
  details: EventDetails;
  /** The change as typed fields: kind, values before and after, percent, confidence. */
  change: TypedChange;
  /** True when the workspace's alert rules notify about it (every event while there are none). */
  alert: boolean;
  /** The alert rules it matched, by id. */
  alertRules: string[];
  isRead: boolean;
  isActioned: boolean;
  detectedAt: string;
  /** The section's page before and after the change, as API URLs; null where no shot was taken. */
  screenshots: { before: string | null; after: string | null };
}

export interface EventItem
  extends Item,
    Omit<CompetitorEvent, "change" | "alert" | "alertRules" | "screenshots"> {
  workspaceId: string;
  /** By id; absent on events recorded without a browser or before screenshots. */
  screenshots?: EventShots;
  /** Absent on events recorded before typed changes and alert rules. */
  change?: TypedChange;
  /** `change.kind`, at the top where a list's filter reaches it. */
  kind?: ChangeKind;
  alert?: boolean;
  alertRules?: string[];
}

export type EventDraft = Pick<
  CompetitorEvent,
  "competitorId" | "competitorDomain" | "type" | "severity" | "title" | "aiBrief" | "details"
> &
  Partial<Pick<CompetitorEvent, "change" | "alert" | "alertRules">> & {
    screenshots?: EventShots;
  };

/** Which events a list keeps: any of each list's values, and the flags as given (none: all). */
export type EventFilter = {
  severity?: readonly Severity[] | undefined;
  competitorId?: readonly string[] | undefined;
  type?: readonly EventType[] | undefined;
  kind?: readonly ChangeKind[] | undefined;
  isRead?: boolean | undefined;
  isActioned?: boolean | undefined;
  alert?: boolean | undefined;
  /** Detected at or after this instant (ISO 8601). */
  since?: string | undefined;
  /** Detected before this instant (ISO 8601). */
  until?: string | undefined;
};

/** The names kinds had before typed changes, for the events recorded then. */
const LEGACY_KINDS: Record<string, ChangeKind> = {
  price_increased: "price_increase",
  price_decreased: "price_decrease",
  now_contact_sales: "moved_to_contact_sales",
  team_added: "new_department",
  postings_added: "roles_added",
  postings_removed: "roles_removed",
  content_published: "post_published",
  content_batch: "post_published",
  headline_changed: "messaging_changed",
  claims_changed: "messaging_changed",
};

const isKind = (kind: string): kind is ChangeKind => (CHANGE_KINDS as string[]).includes(kind);

/**
 * The typed change of an event recorded without one: its kind and percent from the details; the
 * values before and after stay in `details`, whose shapes were free-form then.
 */
function legacyChange(details: EventDetails): TypedChange {
  return {
    kind: isKind(details.change)
      ? details.change
      : (LEGACY_KINDS[details.change] ?? "messaging_changed"),
    subject: details.subject,
    url: details.url,
    before: null,
    after: null,
    percentChange: details.percent ?? null,
    confidence: 1,
    count: 1,
  };
}

export const EVENT_PREFIX = "EVT#";
const eventKey = (id: string) => `${EVENT_PREFIX}${id}`;

/** The untyped details every event kept before `change`; still written for older clients. */
export function detailsOf(change: Change): EventDetails {
  return {
    change: change.kind,
    subject: change.subject,
    before: change.before,
    after: change.after,
    url: change.url,
    ...("percent" in change ? { percent: change.percent } : {}),
    ...("closedTeams" in change ? { closedTeams: change.closedTeams } : {}),
  };
}

export function toPublic(item: EventItem): CompetitorEvent {
  return {
    id: item.id,
    competitorId: item.competitorId,
    competitorDomain: item.competitorDomain,
    type: item.type,
    severity: item.severity,
    title: item.title,
    aiBrief: item.aiBrief,
    details: item.details,
    change: item.change ?? legacyChange(item.details),
    alert: item.alert ?? true,
    alertRules: item.alertRules ?? [],
    isRead: item.isRead,
    isActioned: item.isActioned,
    detectedAt: item.detectedAt,
    screenshots: linkedShots(item.competitorId, item.screenshots),
  };
}

/**
 * Change events of a workspace. Ids sort by time, so the partition read backwards is newest first
 * and filters never need an index.
 */
export class Events {
  constructor(
    private readonly table: Table,
    /** Told `competitor.event` for each event recorded. */
    private readonly webhooks?: WebhookEvents,
  ) {}

  async record(
    workspaceId: string,
    drafts: EventDraft[],
    detectedAt: string,
  ): Promise<CompetitorEvent[]> {
    const events: CompetitorEvent[] = [];
    // Ids sort by time and lists read newest first: drafts are written in the reverse of the
    // order to show, so within one check the feed lists the most severe first, and changes of one
    // severity in the order the check found them.
    const shown = [...drafts].sort((a, b) => bySeverity(a.severity, b.severity));
    for (const draft of shown.reverse()) {
      const id = newId("event");
      const change = draft.change ?? legacyChange(draft.details);
      const item: EventItem = {
        pk: wsKey(workspaceId),
        sk: eventKey(id),
        workspaceId,
        id,
        ...draft,
        change,
        kind: change.kind,
        alert: draft.alert ?? true,
        alertRules: draft.alertRules ?? [],
        isRead: false,
        isActioned: false,
        detectedAt,
      };
      await this.table.put(item);
      events.unshift(toPublic(item));
    }
    // Events are always recorded; only those the alert rules let through notify.
    for (const event of events.filter((e) => e.alert)) {
      await this.webhooks?.emit(workspaceId, "competitor.event", { ...event });
    }
    return events;
  }

  /** One page of events, newest first; the filter applies before the page is cut. */
  list(
    workspaceId: string,
    { severity, competitorId, type, kind, isRead, isActioned, alert, since, until }: EventFilter,
    limit: number,
    cursor?: string,
  ): Promise<Page<EventItem>> {
    return this.table.page<EventItem>({
      pk: wsKey(workspaceId),
      skPrefix: EVENT_PREFIX,
      limit,
      cursor,
      newestFirst: true,
      equals: { isRead, isActioned, alert },
      anyOf: { severity, competitorId, type, kind },
      range: { field: "detectedAt", from: since, to: until },
    });
  }

  async update(
    workspaceId: string,
    id: string,
    fields: { isRead?: boolean | undefined; isActioned?: boolean | undefined },
  ): Promise<CompetitorEvent> {
    const set = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
    const item =
      isId("event", id) &&
      (Object.keys(set).length > 0
        ? await this.table.update<EventItem>(wsKey(workspaceId), eventKey(id), set)
        : await this.table.get<EventItem>(wsKey(workspaceId), eventKey(id)));
    if (!item) throw notFound("event", id);
    return toPublic(item);
  }
}
