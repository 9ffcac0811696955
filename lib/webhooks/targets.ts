/**
 * What a webhook endpoint is: a signed webhook (Standard Webhooks, the default), a Slack or
 * Microsoft Teams incoming webhook, which takes a formatted message instead of the event's JSON,
 * or an email digest of competitor events (digest.ts). Kept free of store imports so route
 * schemas can use it.
 */
/** Kinds that deliver each event to a URL. */
export const URL_KINDS = ["webhook", "slack", "teams"] as const;
export const ENDPOINT_KINDS = [...URL_KINDS, "email"] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];
/** The kinds that receive each event as a chat message. */
export type ChatKind = "slack" | "teams";

/** Recipients one email endpoint may have at most: a team's few inboxes, not a mailing list. */
export const MAX_RECIPIENTS = 5;

/** An address as the API shows it: `j…@example.com`, enough to recognise, not to harvest. */
export const maskedAddress = (address: string) => {
  const [local = "", domain = ""] = address.split("@");
  return `${local.slice(0, 1)}…@${domain}`;
};

/** A Slack or Teams endpoint as the API shows it: its origin only, since its path is the key. */
export const maskedUrl = (url: string) => `${new URL(url).origin}/…`;

/** One delivery of a chat message: its headers and body. */
export interface ChatRequest {
  headers: Record<string, string>;
  body: string;
}

/** What a notification says, whatever the chat: read from the event's data. */
interface Notice {
  title: string;
  severity: string | null;
  competitor: string | null;
  change: string | null;
  brief: string | null;
  link: string | null;
}

/** Slack's header block takes 150 characters, a section 3,000; Teams takes more. */
const MAX_TITLE = 150;
const MAX_TEXT = 2_900;

const clip = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max - 1).trimEnd()}…` : text;

const textField = (value: unknown): string | null =>
  typeof value === "string" && value.trim() ? value.trim() : null;

const fieldOf = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;

/** The event in the console: the competitors screen, opened at the event. */
const eventLink = (consoleUrl: string | undefined, eventId: string | null) =>
  consoleUrl && eventId
    ? new URL(`#/competitors?event=${encodeURIComponent(eventId)}`, consoleUrl).href
    : null;

/** Events other than competitor changes: their type, and their plain fields as a line each. */
function plainLines(data: Record<string, unknown>): string | null {
  const lines = Object.entries(data)
    .filter(([, value]) => ["string", "number", "boolean"].includes(typeof value))
    .slice(0, 8)
    .map(([key, value]) => `${key}: ${String(value)}`);
  return lines.length > 0 ? lines.join("\n") : null;
}

function noticeOf(type: string, data: Record<string, unknown>, consoleUrl?: string): Notice {
  if (type !== "competitor.event") {
    return {
      title: type,
      severity: null,
      competitor: null,
      change: null,
      brief: plainLines(data),
      link: null,
    };
  }
  return {
    title: textField(data.title) ?? "Competitor change",
    severity: textField(data.severity),
    competitor:
      textField(data.competitorName) ??
      textField(data.companyName) ??
      textField(data.competitorDomain),
    // The typed change's kind where events carry one, else the details' own.
    change: textField(fieldOf(data.change, "kind")) ?? textField(fieldOf(data.details, "change")),
    brief: textField(data.aiBrief),
    link: eventLink(consoleUrl, textField(data.id)),
  };
}

/**
 * Slack reads `<…>` as links and mentions (`<!channel>`) and `&` as the start of an entity:
 * text from a competitor's pages is escaped so it can only ever be text.
 */
const slackText = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** Teams renders a Markdown subset in text blocks: page text is escaped out of it. */
const teamsText = (text: string) => text.replace(/[\\`*_[\]()#<>!~|]/g, "\\$&");

const SEVERITY_MARKS: Record<string, string> = {
  critical: ":red_circle:",
  high: ":large_orange_circle:",
  medium: ":large_yellow_circle:",
  low: ":white_circle:",
};

function facts(notice: Notice): Array<[string, string]> {
  const rows: Array<[string, string | null]> = [
    ["Severity", notice.severity],
    ["Competitor", notice.competitor],
    ["Change", notice.change],
  ];
  return rows.filter((row): row is [string, string] => row[1] !== null);
}

/** Slack's incoming webhook: `text` for notifications, blocks for the message itself. */
function slackMessage(notice: Notice): unknown {
  const title = clip(notice.title, MAX_TITLE);
  const mark = notice.severity ? `${SEVERITY_MARKS[notice.severity] ?? ""} ` : "";
  const summary = facts(notice)
    .map(([name, value]) => `*${name}:* ${slackText(value)}`)
    .join("   ");
  const blocks: unknown[] = [{ type: "header", text: { type: "plain_text", text: title } }];
  if (summary) blocks.push({ type: "section", text: { type: "mrkdwn", text: summary } });
  if (notice.brief) {
    const text = slackText(clip(notice.brief, MAX_TEXT));
    blocks.push({ type: "section", text: { type: "mrkdwn", text } });
  }
  if (notice.link) {
    const text = `<${notice.link}|Open in the console>`;
    blocks.push({ type: "context", elements: [{ type: "mrkdwn", text }] });
  }
  const severity = notice.severity ? `[${notice.severity}] ` : "";
  return { text: `${mark}${severity}${slackText(title)}`.trim(), blocks };
}

/**
 * A Teams Adaptive Card, as both Workflows ("Post to a channel when a webhook request is
 * received") and the older Office 365 connectors accept it.
 */
function teamsMessage(notice: Notice): unknown {
  const body: unknown[] = [
    {
      type: "TextBlock",
      text: teamsText(clip(notice.title, MAX_TITLE)),
      weight: "Bolder",
      size: "Medium",
      wrap: true,
      ...(notice.severity === "critical" || notice.severity === "high"
        ? { color: "Attention" }
        : {}),
    },
  ];
  const rows = facts(notice);
  if (rows.length > 0) {
    body.push({
      type: "FactSet",
      facts: rows.map(([title, value]) => ({ title, value: teamsText(value) })),
    });
  }
  if (notice.brief) {
    body.push({ type: "TextBlock", text: teamsText(clip(notice.brief, MAX_TEXT)), wrap: true });
  }
  const card = {
    $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
    type: "AdaptiveCard",
    version: "1.4",
    body,
    ...(notice.link
      ? { actions: [{ type: "Action.OpenUrl", title: "Open in the console", url: notice.link }] }
      : {}),
  };
  return {
    type: "message",
    attachments: [
      { contentType: "application/vnd.microsoft.card.adaptive", contentUrl: null, content: card },
    ],
  };
}

/**
 * The request that posts an event to a Slack or Teams channel: the severity, the change and the
 * competitor, the brief, and a link to the event in the console (`consoleUrl`, when known).
 */
export function chatRequest(
  kind: ChatKind,
  event: { type: string; data: Record<string, unknown> },
  consoleUrl?: string,
): ChatRequest {
  const notice = noticeOf(event.type, event.data, consoleUrl);
  const message = kind === "slack" ? slackMessage(notice) : teamsMessage(notice);
  return {
    headers: { "content-type": "application/json" },
    body: JSON.stringify(message),
  };
}
