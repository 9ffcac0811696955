import type { IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Queue, WebhookMessage } from "../../lib/store/queue.js";
import { wsKey } from "../../lib/store/table.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { DeliveryAbandoned, WebhookDeliverer } from "../../lib/webhooks/delivery.js";
import { deliveryGate } from "../../lib/webhooks/delivery-gate.js";
import { firstDelivery, newEvent, WebhookEmitter } from "../../lib/webhooks/emitter.js";
import { WebhookEndpoints } from "../../lib/webhooks/endpoints.js";
import { startAws, type TestAws } from "../support/aws.js";
import { startSite } from "../support/sites.js";
import { consumeWebhooks } from "./consume.js";

/**
 * Slack and Microsoft Teams channels as webhook targets, through the real queue path (the local
 * SQS endpoint and driver, dynalite, the local KMS, the safe fetcher) to fake Slack and Teams
 * incoming webhooks on 127.0.0.1 that record what they are sent.
 */

interface Posted {
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** A chat's incoming webhook at `path`: records each post and answers the statuses it is told. */
async function fakeChat(path: string, okStatus: number, okBody: string) {
  const posted: Posted[] = [];
  const statuses: number[] = [];
  const site = await startSite({
    [path]: (req, res) => {
      const parts: Buffer[] = [];
      req.on("data", (part: Buffer) => parts.push(part));
      req.on("end", () => {
        const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as Record<string, unknown>;
        posted.push({ path: req.url ?? "", headers: req.headers, body });
        const status = statuses.shift() ?? okStatus;
        res.writeHead(status, { "content-type": "text/plain" }).end(status < 300 ? okBody : "no");
      });
    },
  });
  return {
    site,
    url: `${site.origin}${path}`,
    posted,
    answer: (...s: number[]) => statuses.push(...s),
  };
}

const CONSOLE = "https://console.example.com/v1/";
const SLACK_PATH = "/services/T0001/B0001/slackSecretToken";
const TEAMS_PATH = "/webhookb2/teamsSecretToken/IncomingWebhook/x";

/** A competitor change as Events.record emits it; its title came from the competitor's page. */
const change = {
  id: "evt_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
  competitorId: "comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
  competitorDomain: "acme.com",
  type: "pricing",
  severity: "high",
  title: "Acme: Pro rose 69% to $49 <!channel> [click](https://evil.example)",
  aiBrief: "Acme raised Pro from $29 to $49 a month & kept Free.",
  details: { change: "price_increased", subject: "Pro", before: null, after: null, url: null },
  isRead: false,
  isActioned: false,
  detectedAt: "2025-01-06T10:00:00.000Z",
};

let aws: TestAws;
let endpoints: WebhookEndpoints;
let queue: Queue<WebhookMessage>;
let slack: Awaited<ReturnType<typeof fakeChat>>;
let teams: Awaited<ReturnType<typeof fakeChat>>;
const open = new SafeFetcher({ allowPrivate: true, timeoutMs: 5000 });
let deliverer: WebhookDeliverer;

beforeAll(async () => {
  [aws, slack, teams] = await Promise.all([
    startAws(),
    fakeChat(SLACK_PATH, 200, "ok"),
    fakeChat(TEAMS_PATH, 202, ""),
  ]);
  endpoints = new WebhookEndpoints(aws.table, aws.dataKeys);
  queue = aws.queue<WebhookMessage>("webhooks");
  deliverer = new WebhookDeliverer({
    endpoints,
    queue,
    poster: open,
    retrySeconds: [1],
    consoleUrl: CONSOLE,
    gate: deliveryGate(aws.table, queue),
  });
  consumeWebhooks(aws, () => deliverer);
});

afterAll(async () => {
  await aws.close();
  await Promise.all([slack.site.close(), teams.site.close()]);
});

const emit = (workspaceId: string) =>
  new WebhookEmitter({ endpoints, queue, cacheSeconds: 0 }).emit(
    workspaceId,
    "competitor.event",
    change,
  );

describe("Slack and Teams endpoints", () => {
  it("keeps the channel's URL sealed: shown masked, never stored in plain text, no signing secret", async () => {
    const created = await endpoints.create("ws_chat", {
      url: slack.url,
      kind: "slack",
      events: ["competitor.event"],
    });
    expect(created).toMatchObject({ kind: "slack", url: `${slack.site.origin}/…` });
    expect(created).not.toHaveProperty("secret");
    const stored = await aws.table.get(wsKey("ws_chat"), `WEBHOOK#${created.id}`);
    expect(JSON.stringify(stored)).not.toContain("slackSecretToken");
    expect(stored?.sealedUrl).toBeDefined();
    await endpoints.delete("ws_chat", created.id);
  });

  it("posts a Slack message with the severity, the change, the brief and a link to the event", async () => {
    await endpoints.create("ws_slack", {
      url: slack.url,
      kind: "slack",
      events: ["competitor.event"],
    });
    await emit("ws_slack");
    await aws.queues.idle();

    expect(slack.posted).toHaveLength(1);
    const [post] = slack.posted;
    expect(post?.path).toBe(SLACK_PATH);
    expect(post?.headers["content-type"]).toBe("application/json");
    expect(post?.headers["webhook-signature"]).toBeUndefined();
    const body = post?.body as { text: string; blocks: Array<Record<string, unknown>> };
    // Page text cannot mention the channel or smuggle a link: Slack's controls are escaped.
    expect(body.text).toBe(
      ":large_orange_circle: [high] Acme: Pro rose 69% to $49 &lt;!channel&gt; [click](https://evil.example)",
    );
    expect(body.blocks).toEqual([
      { type: "header", text: { type: "plain_text", text: change.title } },
      {
        type: "section",
        text: {
          type: "mrkdwn",
          text: "*Severity:* high   *Competitor:* acme.com   *Change:* price_increased",
        },
      },
      {
        type: "section",
        text: { type: "mrkdwn", text: "Acme raised Pro from $29 to $49 a month &amp; kept Free." },
      },
      {
        type: "context",
        elements: [
          {
            type: "mrkdwn",
            text: `<${CONSOLE}#/competitors?event=${change.id}|Open in the console>`,
          },
        ],
      },
    ]);
  });

  it("posts a Teams Adaptive Card with the same facts and an action opening the event", async () => {
    await endpoints.create("ws_teams", {
      url: teams.url,
      kind: "teams",
      events: ["competitor.event"],
    });
    await emit("ws_teams");
    await aws.queues.idle();

    expect(teams.posted).toHaveLength(1);
    const body = teams.posted[0]?.body as {
      type: string;
      attachments: Array<{ contentType: string; content: Record<string, unknown> }>;
    };
    expect(body.type).toBe("message");
    expect(body.attachments).toHaveLength(1);
    expect(body.attachments[0]?.contentType).toBe("application/vnd.microsoft.card.adaptive");
    const card = body.attachments[0]?.content as {
      type: string;
      body: Array<Record<string, unknown>>;
      actions: unknown[];
    };
    expect(card.type).toBe("AdaptiveCard");
    expect(card.body[0]).toMatchObject({
      type: "TextBlock",
      weight: "Bolder",
      color: "Attention",
      // Markdown in page text is escaped: no link to evil.example renders.
      text: "Acme: Pro rose 69% to $49 \\<\\!channel\\> \\[click\\]\\(https://evil.example\\)",
    });
    expect(card.body[1]).toEqual({
      type: "FactSet",
      facts: [
        { title: "Severity", value: "high" },
        { title: "Competitor", value: "acme.com" },
        { title: "Change", value: "price\\_increased" },
      ],
    });
    expect(card.body[2]).toMatchObject({ type: "TextBlock", text: change.aiBrief });
    expect(card.actions).toEqual([
      {
        type: "Action.OpenUrl",
        title: "Open in the console",
        url: `${CONSOLE}#/competitors?event=${change.id}`,
      },
    ]);
  });

  it("retries a failed post and shows every attempt in the endpoint's delivery log", async () => {
    const hook = await endpoints.create("ws_retry", {
      url: slack.url,
      kind: "slack",
      events: ["competitor.event"],
    });
    const before = slack.posted.length;
    slack.answer(500);
    await emit("ws_retry");
    await aws.queues.idle();

    expect(slack.posted.length - before).toBe(2);
    const log = await endpoints.deliveries("ws_retry", hook.id, 10);
    expect(log.items.map((a) => [a.attempt, a.result, a.statusCode])).toEqual([
      [2, "delivered", 200],
      [1, "retrying", 500],
    ]);
  });

  it("holds a channel to the same address rules as every fetch: a private address is never posted to", async () => {
    const hook = await endpoints.create("ws_ssrf", {
      url: slack.url,
      kind: "slack",
      events: ["competitor.event"],
    });
    const guarded = new WebhookDeliverer({
      endpoints,
      queue,
      poster: new SafeFetcher({ allowPrivate: false, timeoutMs: 5000 }),
      retrySeconds: [],
      gate: deliveryGate(aws.table, queue),
    });
    const before = slack.site.requests.length;
    const message = firstDelivery("ws_ssrf", hook.id, newEvent("competitor.event", change));
    await expect(guarded.handle(message, { receiveCount: 1 } as never)).rejects.toBeInstanceOf(
      DeliveryAbandoned,
    );
    expect(slack.site.requests.length).toBe(before);
    const [attempt] = (await endpoints.deliveries("ws_ssrf", hook.id, 10)).items;
    expect(attempt).toMatchObject({ result: "dead_lettered", statusCode: null });
    // The log names no part of the channel's secret URL.
    expect(attempt?.error).not.toContain("slackSecretToken");
  });
});
