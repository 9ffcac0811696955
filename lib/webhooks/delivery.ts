import { logger } from "../log.js";
import { redactUrl, redactUrls } from "../redact.js";
import type { Mailer } from "../store/mail.js";
import type { Delivery, Queue, WebhookMessage } from "../store/queue.js";
import { FetchError } from "../web/errors.js";
import type { DeliveryGate } from "./delivery-gate.js";
import { deliveryTurns } from "./delivery-turns.js";
import {
  DIGEST_EVENT_TYPE,
  type Digest,
  type DigestSource,
  MAX_DIGEST_EVENTS,
  renderDigest,
} from "./digest.js";
import type { Attempt, AttemptResult, EndpointItem, WebhookEndpoints } from "./endpoints.js";
import { mimeMessage } from "./mail-message.js";
import { signature } from "./signing.js";
import { type ChatRequest, chatRequest } from "./targets.js";

/** How a delivery leaves: one POST, redirects not followed, answered with its status. */
export interface WebhookPoster {
  post(
    url: string,
    request: { headers: Record<string, string>; body: string },
    options: { timeoutMs: number; maxBytes: number },
  ): Promise<{ status: number; body: string }>;
}

export interface DelivererDeps {
  endpoints: WebhookEndpoints;
  /** The webhooks queue, where the next attempt (and a long wait) is queued. */
  queue: Queue<WebhookMessage>;
  /** The safe fetcher: the endpoint's addresses are checked on every attempt. */
  poster: WebhookPoster;
  /** Seconds before each retry; one attempt more than entries. */
  retrySeconds: number[];
  /** What an attempt holds before it connects: its endpoint's lease, its workspace's slot. */
  gate: DeliveryGate;
  /** The console's address (CONSOLE_URL): Slack and Teams messages link to the event there. */
  consoleUrl?: string | undefined;
  /** Email endpoints' digests: how mail leaves, its sender, and the events a digest reads. */
  mail?: { mailer: Mailer; from: string | undefined; digests: DigestSource } | undefined;
  /** The clock attempts are due and retried by (the fairness simulation's is virtual). */
  now?: () => number;
}

/** How one attempt went: the receiver's status and answer, or why it failed. */
interface Outcome {
  statusCode: number | null;
  response: string | null;
  error: string | null;
}

/** Longest part of an endpoint's answer kept in the delivery log. */
const RESPONSE_EXCERPT = 1024;

/** Thrown once the last attempt failed: the message goes on to the dead-letter queue. */
export class DeliveryAbandoned extends Error {
  constructor(message: WebhookMessage) {
    super(
      `Webhook event ${message.eventId} to ${message.endpointId} failed ${message.attempt} attempts; it goes to the dead-letter queue`,
    );
    this.name = "DeliveryAbandoned";
  }
}

export type DeliveryOutcome = AttemptResult | "waiting" | "dropped" | "deferred";

/**
 * The webhooks worker: one attempt per message, signed as Standard Webhooks says. A failed
 * attempt queues the next one after its backoff (longer waits than SQS's 15 minutes go round the
 * queue again, carried by `notBefore`); the last one throws, so the queue retries the message a
 * few times and then dead-letters it. Each attempt is logged once: a message delivered again
 * (a crash after the POST, or the queue's retries of a given-up message) does not post again.
 * A redriven message starts fresh and makes its last attempt again. An attempt connects only
 * through the gate (one per endpoint at a time, none while its circuit is open, a workspace no
 * more than its share): otherwise its delivery is deferred (delivery-gate.ts).
 */
export class WebhookDeliverer {
  private readonly now: () => number;

  constructor(private readonly deps: DelivererDeps) {
    // Date read at each call, not here: a test that fakes Date after this loads moves it too.
    this.now = deps.now ?? (() => Date.now());
  }

  /**
   * A handler for the records of one invocation that must end by `deadline` (epoch ms): those of
   * one endpoint take turns (delivery-turns.ts).
   */
  invocation(deadline: number) {
    return deliveryTurns(
      (m, d, mayAttempt) => this.handle(m, d, mayAttempt),
      this.deps.gate.leaseMs,
      deadline,
      this.now,
    );
  }

  async handle(
    message: WebhookMessage,
    delivery: Delivery,
    mayAttempt = true,
  ): Promise<DeliveryOutcome> {
    const { endpoints, queue } = this.deps;
    const wait = (message.notBefore ?? 0) - this.now();
    if (wait > 1000) {
      await queue.send(message, wait / 1000);
      return "waiting";
    }
    const endpoint = await endpoints.find(message.workspaceId, message.endpointId);
    if (!endpoint) return "dropped";
    const logged = await endpoints.attempt(
      message.workspaceId,
      message.endpointId,
      message.eventId,
      message.attempt,
    );
    if (logged?.result === "delivered") return "delivered";
    const attempt =
      logged && delivery.receiveCount > 1
        ? logged
        : await this.deps.gate.through(message, mayAttempt, () => this.attempt(endpoint, message));
    if (attempt === "deferred") return attempt;
    if (attempt.result === "retrying") {
      const delay = this.deps.retrySeconds[message.attempt - 1] ?? 0;
      // The next attempt starts with no deferrals of its own.
      await queue.send(
        {
          ...message,
          attempt: message.attempt + 1,
          notBefore: this.now() + delay * 1000,
          deferrals: 0,
        },
        delay,
      );
    }
    if (attempt.result === "dead_lettered") throw new DeliveryAbandoned(message);
    return attempt.result;
  }

  /** A signed webhook's request: the event as JSON, signed as Standard Webhooks says. */
  private async signed(endpoint: EndpointItem, message: WebhookMessage): Promise<ChatRequest> {
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      type: message.type,
      timestamp: message.occurredAt,
      data: message.data,
    });
    const headers = {
      "content-type": "application/json",
      "webhook-id": message.eventId,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signature(
        await this.deps.endpoints.signingSecret(endpoint),
        message.eventId,
        timestamp,
        body,
      ),
    };
    return { headers, body };
  }

  /**
   * Sends an email endpoint's message: the period's digest (or a test's short note), as text and
   * HTML, to its recipients. A refusal or an unreachable mail service is a failed attempt.
   */
  private async mail(endpoint: EndpointItem, message: WebhookMessage): Promise<Outcome> {
    const mail = this.deps.mail;
    if (!mail?.from) {
      return { statusCode: null, response: null, error: "No sender is configured (MAIL_FROM)" };
    }
    const rendered =
      message.type === DIGEST_EVENT_TYPE
        ? await this.digest(endpoint, message, mail.digests)
        : {
            subject: "Test email from your competitor digest",
            text: "This address receives the workspace's competitor digest.",
            html: "<p>This address receives the workspace's competitor digest.</p>",
          };
    const to = await this.deps.endpoints.recipients(endpoint);
    const raw = mimeMessage({ from: mail.from, to, ...rendered, date: new Date() });
    try {
      const id = await mail.mailer.send({ from: mail.from, to, raw });
      return { statusCode: null, response: id || null, error: null };
    } catch (err) {
      return { statusCode: null, response: null, error: (err as Error).message };
    }
  }

  private async digest(endpoint: EndpointItem, message: WebhookMessage, digests: DigestSource) {
    const period = { since: String(message.data.since), until: String(message.data.until) };
    const { events, more } = await digests(message.workspaceId, period, MAX_DIGEST_EVENTS);
    const digest: Digest = endpoint.digest ?? "daily";
    return renderDigest(
      { digest, period, events, more, label: endpoint.description },
      this.deps.consoleUrl,
    );
  }

  /** POSTs the event once as the endpoint's kind takes it. */
  private async post(endpoint: EndpointItem, message: WebhookMessage): Promise<Outcome> {
    const kind = endpoint.kind ?? "webhook";
    if (kind === "email") return this.mail(endpoint, message);
    const { headers, body } =
      kind === "webhook"
        ? await this.signed(endpoint, message)
        : chatRequest(kind, message, this.deps.consoleUrl);
    const url = await this.deps.endpoints.targetUrl(endpoint);
    let statusCode: number | null = null;
    let response: string | null = null;
    let error: string | null = null;
    try {
      const answer = await this.deps.poster.post(
        url,
        { headers, body },
        { timeoutMs: this.deps.gate.attemptTimeoutMs, maxBytes: RESPONSE_EXCERPT },
      );
      statusCode = answer.status;
      response = answer.body || null;
      if (statusCode < 200 || statusCode >= 300) {
        error = `The endpoint answered HTTP ${statusCode}`;
      }
    } catch (err) {
      if (!(err instanceof FetchError)) throw err;
      error = err.message;
    }
    return { statusCode, response, error };
  }

  /** Delivers the event once, as the endpoint's kind takes it, and logs how it went. */
  private async attempt(endpoint: EndpointItem, message: WebhookMessage): Promise<Attempt> {
    const started = performance.now();
    const { statusCode, response, error } = await this.post(endpoint, message);
    const retryIn = this.deps.retrySeconds[message.attempt - 1];
    const result: AttemptResult =
      error === null ? "delivered" : retryIn === undefined ? "dead_lettered" : "retrying";
    const attempt: Attempt = {
      eventId: message.eventId,
      type: message.type,
      attempt: message.attempt,
      result,
      statusCode,
      error,
      response,
      durationMs: Math.round(performance.now() - started),
      attemptedAt: new Date().toISOString(),
      nextAttemptAt:
        result === "retrying" && retryIn !== undefined
          ? new Date(Date.now() + retryIn * 1000).toISOString()
          : null,
    };
    await this.deps.endpoints.record(message.workspaceId, message.endpointId, attempt);
    if (result !== "delivered") {
      // The endpoint's URL often carries a token: the log shows its origin and path only.
      logger.warn("webhook attempt failed", {
        workspaceId: message.workspaceId,
        endpointId: message.endpointId,
        url: redactUrl(endpoint.url),
        eventId: message.eventId,
        attempt: message.attempt,
        result,
        statusCode,
        error: error && redactUrls(error),
      });
    }
    return attempt;
  }
}
