import { toDisplayText } from "../display-text.js";
import type { BriefInput } from "./brief.js";
import { summarize, titleOf } from "./brief.js";
import {
  confidenceOf,
  type FoldedChanges,
  foldedChange,
  foldedSubject,
  MAX_EVENTS_PER_KIND,
  type TypedChange,
  typedChange,
} from "./changes.js";
import type { CompetitorItem } from "./competitors.js";
import type { Change } from "./diff.js";
import { detailsOf, type EventDraft } from "./events.js";
import { bySeverity, severityOf } from "./severity.js";
import type { Facts } from "./snapshot.js";

/** One event to record, and what the model is told to brief it (none for a folded event). */
export interface DraftPart {
  draft: EventDraft & { change: TypedChange };
  input?: BriefInput;
}

export interface DraftContext {
  item: CompetitorItem;
  /** The company's name, or its domain until a check finds the name. */
  name: string;
  /** The facts compared: each change's confidence comes from its section's extraction. */
  before: Facts;
  after: Facts;
}

/** Built from the competitor's own pages: shown as a label, so made a display string. */
const label = (text: string) => toDisplayText(text) || "Site changed";

function folded(part: FoldedChanges, { item, name, before, after }: DraftContext): DraftPart {
  const severity = part.changes.map(severityOf).sort(bySeverity)[0] ?? "low";
  const change = foldedChange(part, confidenceOf(part.type, before, after));
  const subjects = change.subjects ?? [];
  return {
    draft: {
      competitorId: item.id,
      competitorDomain: item.domain,
      type: part.type,
      severity,
      title: label(`${name}: ${foldedSubject(part)}`),
      aiBrief: `${name}: ${foldedSubject(part)} in this check, beyond the ${MAX_EVENTS_PER_KIND - 1} reported one by one: ${subjects.join("; ")}.`,
      details: {
        change: part.kind,
        subject: change.subject,
        before: null,
        after: subjects,
        url: part.url,
      },
      change,
    },
  };
}

/** The event a change (or a folded group of changes) becomes, before its brief and alert. */
export function draftOf(part: Change | FoldedChanges, context: DraftContext): DraftPart {
  if ("folded" in part) return folded(part, context);
  const { item, name, before, after } = context;
  const severity = severityOf(part);
  const title = label(titleOf(part, name));
  const summary = summarize(part, name);
  return {
    draft: {
      competitorId: item.id,
      competitorDomain: item.domain,
      type: part.type,
      severity,
      title,
      aiBrief: summary,
      details: detailsOf(part),
      change: typedChange(part, confidenceOf(part.type, before, after)),
    },
    input: {
      workspaceId: item.workspaceId,
      competitor: { id: item.id, domain: item.domain },
      change: part,
      severity,
      title,
      summary,
    },
  };
}
