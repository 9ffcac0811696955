import { notFound } from "../errors.js";
import { isId, newId } from "../ids.js";
import { type Item, type Page, type Table, wsKey } from "../store/table.js";
import type { WebhookEvents } from "../webhooks/events.js";
import type { Change, ChangeKind } from "./diff.js";
import { SECTIONS, type Section } from "./sections.js";
import type { Severity } from "./severity.js";

export type EventType = Section;
export const EVENT_TYPES: readonly EventType[] = SECTIONS;

/** What changed, with the values before and after. */
export interface EventDetails {
  change: ChangeKind;
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
  isRead: boolean;
  isActioned: boolean;
  detectedAt: string;
}

export interface EventItem extends Item, CompetitorEvent {
  workspaceId: string;
}

export type EventDraft = Pick<
  CompetitorEvent,
  "competitorId" | "competitorDomain" | "type" | "severity" | "title" | "aiBrief" | "details"
>;

/** Which events a list keeps: any of each list's values, and the flags as given (none: all). */
export type EventFilter = {
  severity?: readonly Severity[] | undefined;
  competitorId?: readonly string[] | undefined;
  type?: readonly EventType[] | undefined;
  isRead?: boolean | undefined;
  isActioned?: boolean | undefined;
};

export const EVENT_PREFIX = "EVT#";
const eventKey = (id: string) => `${EVENT_PREFIX}${id}`;

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
    isRead: item.isRead,
    isActioned: item.isActioned,
    detectedAt: item.detectedAt,
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
    for (const draft of drafts) {
      const id = newId("event");
      const item: EventItem = {
        pk: wsKey(workspaceId),
        sk: eventKey(id),
        workspaceId,
        id,
        ...draft,
        isRead: false,
        isActioned: false,
        detectedAt,
      };
      await this.table.put(item);
      events.push(toPublic(item));
    }
    for (const event of events) {
      await this.webhooks?.emit(workspaceId, "competitor.event", { ...event });
    }
    return events;
  }

  /** One page of events, newest first; the filter applies before the page is cut. */
  list(
    workspaceId: string,
    { severity, competitorId, type, isRead, isActioned }: EventFilter,
    limit: number,
    cursor?: string,
  ): Promise<Page<EventItem>> {
    return this.table.page<EventItem>({
      pk: wsKey(workspaceId),
      skPrefix: EVENT_PREFIX,
      limit,
      cursor,
      newestFirst: true,
      equals: { isRead, isActioned },
      anyOf: { severity, competitorId, type },
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
