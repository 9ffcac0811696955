import { logger } from "../log.js";
import { redactUrl, redactUrls } from "../redact.js";
import type { Delivery, Queue, WebhookMessage } from "../store/queue.js";
import { FetchError } from "../web/errors.js";
import type { Attempt, AttemptResult, EndpointItem, WebhookEndpoints } from "./endpoints.js";
import { signature } from "./signing.js";

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
}

/** Longest part of an endpoint's answer kept in the delivery log. */
const RESPONSE_EXCERPT = 1024;
/** An endpoint answers within this or the attempt fails (Standard Webhooks asks receivers to be quick). */
const DELIVERY_TIMEOUT_MS = 10_000;

/** Thrown once the last attempt failed: the message goes on to the dead-letter queue. */
export class DeliveryAbandoned extends Error {
  constructor(message: WebhookMessage) {
    super(
      `Webhook event ${message.eventId} to ${message.endpointId} failed ${message.attempt} attempts; it goes to the dead-letter queue`,
    );
    this.name = "DeliveryAbandoned";
  }
}

export type DeliveryOutcome = AttemptResult | "waiting" | "dropped";

/**
 * The webhooks worker: one attempt per message, signed as Standard Webhooks says. A failed
 * attempt queues the next one after its backoff (longer waits than SQS's 15 minutes go round the
 * queue again, carried by `notBefore`); the last one throws, so the queue retries the message a
 * few times and then dead-letters it. Each attempt is logged once: a message delivered again
 * (a crash after the POST, or the queue's retries of a given-up message) does not post again.
 * A redriven message starts fresh and makes its last attempt again.
 */
export class WebhookDeliverer {
  constructor(private readonly deps: DelivererDeps) {}

  async handle(message: WebhookMessage, delivery: Delivery): Promise<DeliveryOutcome> {
    const { endpoints, queue } = this.deps;
    const wait = (message.notBefore ?? 0) - Date.now();
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
      logged && delivery.receiveCount > 1 ? logged : await this.attempt(endpoint, message);
    if (attempt.result === "retrying") {
      const delay = this.deps.retrySeconds[message.attempt - 1] ?? 0;
      await queue.send(
        { ...message, attempt: message.attempt + 1, notBefore: Date.now() + delay * 1000 },
        delay,
      );
    }
    if (attempt.result === "dead_lettered") throw new DeliveryAbandoned(message);
    return attempt.result;
  }

  /** POSTs the event once, signed, and logs how it went. */
  private async attempt(endpoint: EndpointItem, message: WebhookMessage): Promise<Attempt> {
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
    const started = performance.now();
    let statusCode: number | null = null;
    let response: string | null = null;
    let error: string | null = null;
    try {
      const answer = await this.deps.poster.post(
        endpoint.url,
        { headers, body },
        { timeoutMs: DELIVERY_TIMEOUT_MS, maxBytes: RESPONSE_EXCERPT },
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
