import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SESv2Client } from "@aws-sdk/client-sesv2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Events } from "../../lib/competitors/events.js";
import { loadConfig } from "../../lib/config.js";
import { createDataKeys, createStores } from "../../lib/store/clients.js";
import { SesMailer } from "../../lib/store/mail.js";
import { wsKey } from "../../lib/store/table.js";
import { WebhookDeliverer } from "../../lib/webhooks/delivery.js";
import { deliveryGate } from "../../lib/webhooks/delivery-gate.js";
import {
  DIGEST_EVENT_TYPE,
  type DigestEvent,
  digestEventId,
  digestPeriod,
  groupEvents,
} from "../../lib/webhooks/digest.js";
import { queueDigests } from "../../lib/webhooks/digest-schedule.js";
import { firstDelivery } from "../../lib/webhooks/emitter.js";
import {
  DIGEST_INDEX,
  type DigestIndexItem,
  WebhookEndpoints,
} from "../../lib/webhooks/endpoints.js";
import { mimeMessage } from "../../lib/webhooks/mail-message.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";
import { startSite } from "../support/sites.js";

/**
 * Email digests: due-ness on a clock set by hand, the digest's order, the MIME it becomes, and
 * the whole path on the local runtime (the API, the schedule's queueing, the webhooks worker,
 * the outbox folder the local mailer writes).
 */

const MONDAY_7 = new Date("2026-11-30T07:30:00Z");

describe("which digests are due", () => {
  it("sends daily digests at the digest hour, weekly ones on Mondays, over whole periods", () => {
    expect(digestPeriod("daily", MONDAY_7, 7)).toEqual({
      since: "2026-11-29T07:00:00.000Z",
      until: "2026-11-30T07:00:00.000Z",
    });
    expect(digestPeriod("weekly", MONDAY_7, 7)).toEqual({
      since: "2026-11-23T07:00:00.000Z",
      until: "2026-11-30T07:00:00.000Z",
    });
    expect(digestPeriod("daily", new Date("2026-11-30T08:00:00Z"), 7)).toBeNull();
    expect(digestPeriod("daily", new Date("2026-11-30T06:59:59Z"), 7)).toBeNull();
    expect(digestPeriod("weekly", new Date("2026-12-01T07:00:00Z"), 7)).toBeNull();
    expect(digestPeriod("daily", new Date("2026-12-01T07:00:00Z"), 7)).not.toBeNull();
  });
});

const event = (
  competitorId: string,
  severity: DigestEvent["severity"],
  detectedAt: string,
): DigestEvent => ({
  id: `evt_${competitorId}_${severity}_${detectedAt}`,
  competitorId,
  competitorDomain: `${competitorId}.example`,
  severity,
  title: `${competitorId} ${severity}`,
  detectedAt,
  change: {
    kind: "plan_added",
    subject: "Pro",
    url: null,
    before: null,
    after: null,
    percentChange: null,
  },
});

describe("a digest's order", () => {
  it("puts the competitor with the most severe event first, and each one's events severity first", () => {
    const groups = groupEvents([
      event("acme", "low", "2026-11-29T10:00:00Z"),
      event("globex", "high", "2026-11-29T09:00:00Z"),
      event("acme", "medium", "2026-11-29T08:00:00Z"),
      event("initech", "critical", "2026-11-29T08:00:00Z"),
      event("globex", "high", "2026-11-29T11:00:00Z"),
      event("globex", "critical", "2026-11-29T07:30:00Z"),
    ]);
    expect(groups.map((g) => g.competitor)).toEqual([
      // Both have a critical event: the one with more events first.
      "globex.example",
      "initech.example",
      "acme.example",
    ]);
    expect(groups[0]?.events.map((e) => [e.severity, e.detectedAt])).toEqual([
      ["critical", "2026-11-29T07:30:00Z"],
      ["high", "2026-11-29T11:00:00Z"],
      ["high", "2026-11-29T09:00:00Z"],
    ]);
    expect(groups[2]?.events.map((e) => e.severity)).toEqual(["medium", "low"]);
  });
});

/** The headers of a message, unfolded, by lower-case name. */
function headersOf(raw: string): Map<string, string> {
  const head = raw.slice(0, raw.indexOf("\r\n\r\n")).replace(/\r\n[ \t]/g, " ");
  return new Map(
    head.split("\r\n").map((line) => {
      const at = line.indexOf(":");
      return [line.slice(0, at).toLowerCase(), line.slice(at + 1).trim()];
    }),
  );
}

const decodeWords = (value: string) =>
  value.replace(/=\?UTF-8\?B\?([^?]+)\?=\s?/g, (_, b64: string) =>
    Buffer.from(b64, "base64").toString("utf8"),
  );

/** The multipart's parts: each one's content type and its decoded body. */
function partsOf(raw: string): Array<{ type: string; body: string }> {
  const boundary = headersOf(raw)
    .get("content-type")
    ?.match(/boundary="([^"]+)"/)?.[1];
  expect(boundary).toBeDefined();
  const sections = raw.split(`--${boundary}`).slice(1, -1);
  expect(raw.trimEnd().endsWith(`--${boundary}--`)).toBe(true);
  return sections.map((section) => {
    const [head = "", body = ""] = section.replace(/^\r\n/, "").split("\r\n\r\n");
    return {
      type: head.match(/Content-Type: ([^;]+)/)?.[1] ?? "",
      body: Buffer.from(body.replace(/\s/g, ""), "base64").toString("utf8"),
    };
  });
}

describe("the MIME message", () => {
  it("never lets data start a header: CR and LF in a value fold to spaces", () => {
    const raw = mimeMessage({
      from: "digests@example.com",
      to: ["team@example.com"],
      subject: "Acme\r\nBcc: victim@evil.example\r\n\r\n<script>",
      text: "body\r\nBcc: not-a-header@evil.example",
      html: "<p>body</p>",
      date: MONDAY_7,
    });
    const headers = headersOf(raw);
    expect(headers.has("bcc")).toBe(false);
    expect([...headers.keys()]).toEqual([
      "from",
      "to",
      "subject",
      "date",
      "message-id",
      "mime-version",
      "content-type",
    ]);
    expect(headers.get("subject")).toBe("Acme Bcc: victim@evil.example <script>");
    // Bodies are base64: no line of the message is data as written.
    expect(raw).not.toMatch(/^Bcc:/im);
    expect(headers.get("date")).toBe("Mon, 30 Nov 2026 07:30:00 +0000");
  });

  it("carries a non-ASCII subject as encoded words", () => {
    const raw = mimeMessage({
      from: "digests@example.com",
      to: ["team@example.com"],
      subject: "Société Générale a changé ses prix — Ünïcödé",
      text: "t",
      html: "h",
      date: MONDAY_7,
    });
    const subject = headersOf(raw).get("subject") ?? "";
    expect(subject).toMatch(/^=\?UTF-8\?B\?/);
    expect(decodeWords(subject)).toBe("Société Générale a changé ses prix — Ünïcödé");
  });
});

describe("sending through Amazon SES", () => {
  it("gives SES v2 SendEmail the message's very bytes, with its sender and recipients", async () => {
    // A stand-in for SES's REST endpoint on 127.0.0.1: no emulator covers SES.
    const received: Array<{ path: string; body: Record<string, unknown> }> = [];
    const ses = await startSite({
      "/v2/email/outbound-emails": (req, res) => {
        const parts: Buffer[] = [];
        req.on("data", (part: Buffer) => parts.push(part));
        req.on("end", () => {
          received.push({
            path: req.url ?? "",
            body: JSON.parse(Buffer.concat(parts).toString("utf8")) as Record<string, unknown>,
          });
          res
            .writeHead(200, { "content-type": "application/json" })
            .end(JSON.stringify({ MessageId: "0100018c-ses-id" }));
        });
      },
    });
    try {
      const client = new SESv2Client({
        endpoint: ses.origin,
        region: "eu-west-1",
        credentials: { accessKeyId: "test", secretAccessKey: "test" },
      });
      const raw = mimeMessage({
        from: "digests@example.com",
        to: ["team@example.com"],
        subject: "Digest",
        text: "text",
        html: "<p>html</p>",
        date: MONDAY_7,
      });
      const id = await new SesMailer(client).send({
        from: "digests@example.com",
        to: ["team@example.com"],
        raw,
      });
      expect(id).toBe("0100018c-ses-id");
      expect(received).toHaveLength(1);
      const body = received[0]?.body as {
        FromEmailAddress: string;
        Destination: { ToAddresses: string[] };
        Content: { Raw: { Data: string } };
      };
      expect(body.FromEmailAddress).toBe("digests@example.com");
      expect(body.Destination.ToAddresses).toEqual(["team@example.com"]);
      expect(Buffer.from(body.Content.Raw.Data, "base64").toString("utf8")).toBe(raw);
    } finally {
      await ses.close();
    }
  });
});

describe("email digests on the local runtime", () => {
  let rt: TestRuntime;
  let outbox: string;
  const saved = { ...process.env };

  beforeAll(async () => {
    outbox = await mkdtemp(join(tmpdir(), "outbox-"));
    process.env.MAIL_OUTBOX_DIR = outbox;
    process.env.MAIL_FROM = "digests@example.com";
    process.env.CONSOLE_URL = "https://console.example.com/v1/";
    process.env.WEBHOOK_RETRY_SECONDS = "1";
    rt = await startTestRuntime();
  });
  afterAll(async () => {
    await rt.close();
    await rm(outbox, { recursive: true, force: true });
    process.env = saved;
  });

  const table = () => createStores(loadConfig()).table;

  it("refuses bad recipients, too many, a url or a missing list with a 400 naming the field", async () => {
    const bodies = [
      { kind: "email", recipients: ["not-an-address"], events: ["competitor.event"] },
      { kind: "email", recipients: ["a@x.com\r\nBcc: b@y.com"], events: ["competitor.event"] },
      {
        kind: "email",
        recipients: ["a@x.com", "b@x.com", "c@x.com", "d@x.com", "e@x.com", "f@x.com"],
        events: ["competitor.event"],
      },
      { kind: "email", events: ["competitor.event"] },
      {
        kind: "email",
        url: "https://x.example",
        recipients: ["a@x.com"],
        events: ["competitor.event"],
      },
      { url: "https://x.example", recipients: ["a@x.com"], events: ["competitor.event"] },
    ];
    const fields = ["recipients", "recipients", "recipients", "recipients", "url", "recipients"];
    for (const [i, json] of bodies.entries()) {
      const res = await rt.call("/api/webhooks", { method: "POST", json });
      expect(res.status, JSON.stringify(json)).toBe(400);
      const body = (await res.json()) as {
        error: { code: string; details?: { issues?: Array<{ path: unknown }> } };
      };
      expect(body.error.code).toBe("validation_failed");
      expect(JSON.stringify(body.error.details?.issues?.[0]?.path)).toContain(fields[i]);
    }
  });

  it("sends the period's events grouped by competitor as a text and HTML email into the outbox", async () => {
    const res = await rt.call("/api/webhooks", {
      method: "POST",
      json: {
        kind: "email",
        recipients: ["marketing@example.com", "ceo@example.org"],
        digest: "daily",
        events: ["competitor.event"],
        description: "Growth",
      },
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as Record<string, unknown>;
    expect(created).toMatchObject({
      kind: "email",
      url: "mailto:",
      digest: "daily",
      recipients: ["m…@example.com", "c…@example.org"],
    });
    expect(created.secret).toBeUndefined();

    // The addresses are personal data: nothing in the table holds them in the clear.
    const [entry] = (
      await table().page<DigestIndexItem>({
        pk: DIGEST_INDEX,
        skPrefix: "",
        limit: 10,
      })
    ).items;
    const workspaceId = entry?.workspaceId ?? "";
    const stored = await table().all(wsKey(workspaceId), "WEBHOOK#");
    expect(JSON.stringify(stored)).not.toContain("marketing@");
    // It gets digests on its schedule, never each event as it happens.
    const subscribers = await new WebhookEndpoints(table()).subscribers(workspaceId);
    expect(subscribers.map((e) => e.id)).not.toContain(created.id);

    const events = new Events(table());
    const draft = (competitor: string, severity: "low" | "critical" | "high", title: string) => ({
      competitorId: `comp_${competitor}`,
      // A name from a competitor's site may hold anything, line breaks included.
      competitorDomain:
        competitor === "globex"
          ? "globex.example\r\nBcc: leak@evil.example"
          : `${competitor}.example`,
      type: "pricing" as const,
      severity,
      title,
      aiBrief: "",
      details: { change: "price_increase", subject: "Pro", before: null, after: null, url: null },
      change: {
        kind: "price_increase" as const,
        subject: "Pro",
        url: null,
        before: { plan: "Pro", amount: 29, currency: "USD" },
        after: { plan: "Pro", amount: 49, currency: "USD" },
        percentChange: 69,
        confidence: 1,
        count: 1,
      },
    });
    await events.record(
      workspaceId,
      [draft("acme", "low", "Acme tweaked a plan")],
      "2026-11-29T10:00:00.000Z",
    );
    await events.record(
      workspaceId,
      [draft("globex", "critical", "Globex: Pro rose 69% to $49 <b>")],
      "2026-11-30T06:00:00.000Z",
    );
    // Before the period: not in this digest.
    await events.record(
      workspaceId,
      [draft("initech", "high", "Initech old news")],
      "2026-11-28T10:00:00.000Z",
    );

    const queue = createStores(loadConfig()).webhooksQueue;
    const endpoints = new WebhookEndpoints(table());
    expect(await queueDigests(endpoints, queue, new Date("2026-11-30T08:30:00Z"), 7)).toBe(0);
    expect(await queueDigests(endpoints, queue, MONDAY_7, 7)).toBe(1);

    await rt.runtime.queues.idle();
    const raw = await mailIn(outbox);
    expect(raw).toHaveLength(1);
    const headers = headersOf(raw[0] ?? "");
    expect(headers.get("from")).toBe("digests@example.com");
    expect(headers.get("to")).toBe("marketing@example.com, ceo@example.org");
    expect(headers.has("bcc")).toBe(false);
    expect(headers.get("subject")).toBe(
      "[Growth] Your daily competitor digest: 2 changes, 1 critical (globex.example Bcc: leak@evil.example, acme.example)",
    );
    expect(headers.get("date")).toMatch(/^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$/);
    expect(headers.get("content-type")).toMatch(/^multipart\/alternative; boundary="=_digest_/);
    const [text, html] = partsOf(raw[0] ?? "");
    expect(text?.type).toBe("text/plain");
    expect(html?.type).toBe("text/html");
    expect(text?.body).not.toContain("Initech");
    expect(text?.body.indexOf("globex.example")).toBeLessThan(
      text?.body.indexOf("acme.example") ?? 0,
    );
    expect(text?.body).toContain("price increase · Pro: USD 29 → USD 49 (+69%)");
    expect(text?.body).toContain("https://console.example.com/v1/#/competitors?event=evt_");
    expect(html?.body).toContain("Globex: Pro rose 69% to $49 &lt;b&gt;");

    // The attempt is in the endpoint's delivery log; queueing the same period again sends nothing.
    const id = String(created.id);
    const log = (await (await rt.call(`/api/webhooks/${id}/deliveries`)).json()) as {
      deliveries: Array<{ type: string; result: string }>;
    };
    expect(log.deliveries).toEqual([
      expect.objectContaining({ type: "competitor.digest", result: "delivered" }),
    ]);
    await queueDigests(endpoints, queue, MONDAY_7, 7);
    await rt.runtime.queues.idle();
    expect(await mailIn(outbox)).toHaveLength(1);
  });

  it("retries a send the mail service refused, and logs both attempts", async () => {
    const res = await rt.call("/api/webhooks", {
      method: "POST",
      json: { kind: "email", recipients: ["ops@example.com"], events: ["competitor.event"] },
    });
    const { id } = (await res.json()) as { id: string };
    const item = await new WebhookEndpoints(table()).digestIndexPage(100);
    const workspaceId = item.items.find((e) => e.endpointId === id)?.workspaceId ?? "";
    const stores = createStores(loadConfig());
    // This attempt's mail service refuses; the next attempt goes through the runtime's worker.
    const refusing = new WebhookDeliverer({
      endpoints: new WebhookEndpoints(stores.table, createDataKeys(loadConfig())),
      queue: stores.webhooksQueue,
      poster: { post: () => Promise.reject(new Error("no posts here")) },
      retrySeconds: [0],
      gate: deliveryGate(stores.table, stores.webhooksQueue),
      mail: {
        mailer: {
          send: () => Promise.reject(new Error("Throttling: Maximum sending rate exceeded")),
        },
        from: "digests@example.com",
        digests: async () => ({ events: [], more: false }),
      },
    });
    const before = (await mailIn(outbox)).length;
    const message = firstDelivery(workspaceId, id, {
      eventId: digestEventId(id, "2026-11-30T07:00:00.000Z"),
      type: DIGEST_EVENT_TYPE,
      occurredAt: "2026-11-30T07:00:00.000Z",
      data: { since: "2026-11-29T07:00:00.000Z", until: "2026-11-30T07:00:00.000Z" },
    });
    expect(await refusing.handle(message, { receiveCount: 1, maxReceiveCount: 3 })).toBe(
      "retrying",
    );
    await rt.runtime.queues.idle();
    const log = (await (await rt.call(`/api/webhooks/${id}/deliveries`)).json()) as {
      deliveries: Array<{ attempt: number; result: string; error: string | null }>;
    };
    expect(log.deliveries).toEqual([
      expect.objectContaining({ attempt: 2, result: "delivered", error: null }),
      expect.objectContaining({
        attempt: 1,
        result: "retrying",
        error: "Throttling: Maximum sending rate exceeded",
      }),
    ]);
    const mail = await mailIn(outbox);
    expect(mail).toHaveLength(before + 1);
    expect(headersOf(mail.at(-1) ?? "").get("to")).toBe("ops@example.com");
  });
});

/** The outbox's messages, oldest first. */
async function mailIn(dir: string): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".eml")).sort();
  return Promise.all(files.map((f) => readFile(join(dir, f), "utf8")));
}
