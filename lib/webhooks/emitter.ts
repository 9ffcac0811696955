import { LRUCache } from "lru-cache";
import { newId } from "../ids.js";
import { logger } from "../log.js";
import type { Queue, WebhookMessage } from "../store/queue.js";
import type { WebhookEndpoints } from "./endpoints.js";
import type { WebhookEventData, WebhookEvents, WebhookEventType } from "./events.js";

/** Longest an emission holds up the work that emits: past it the caller goes on, logged. */
const EMIT_BUDGET_MS = 3_000;

export interface EmitterDeps {
  endpoints: Pick<WebhookEndpoints, "subscribers">;
  queue: Queue<WebhookMessage>;
  /** How long a workspace's subscriptions are trusted before they are read again. */
  cacheSeconds: number;
}

type Subscribers = Awaited<ReturnType<WebhookEndpoints["subscribers"]>>;

/** One event, as every endpoint receives it: one id, one time, whatever the endpoint. */
export type WebhookEvent = Pick<WebhookMessage, "eventId" | "type" | "occurredAt" | "data">;

export const newEvent = (type: string, data: WebhookEventData): WebhookEvent => ({
  eventId: newId("message"),
  type,
  occurredAt: new Date().toISOString(),
  data,
});

/** The first delivery of an event to one endpoint, as the webhooks queue carries it. */
export const firstDelivery = (
  workspaceId: string,
  endpointId: string,
  event: WebhookEvent,
): WebhookMessage => ({ kind: "webhook-delivery", workspaceId, endpointId, ...event, attempt: 1 });

/**
 * Emits events as queued deliveries: reads which endpoints of the workspace subscribe (cached
 * briefly, so a burst of events reads them once) and queues one delivery per endpoint. A failure
 * or a slow queue is logged and never reaches the caller.
 */
export class WebhookEmitter implements WebhookEvents {
  private readonly cache: LRUCache<string, Subscribers> | undefined;

  constructor(private readonly deps: EmitterDeps) {
    this.cache =
      deps.cacheSeconds > 0
        ? new LRUCache({ max: 1000, ttl: deps.cacheSeconds * 1000, ttlResolution: 0 })
        : undefined;
  }

  async emit(workspaceId: string, type: WebhookEventType, data: WebhookEventData): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), EMIT_BUDGET_MS);
    });
    try {
      const outcome = await Promise.race([this.enqueue(workspaceId, type, data), late]);
      if (outcome === "late") {
        logger.warn("webhook event still queueing; going on without it", { workspaceId, type });
      }
    } catch (err) {
      logger.error("webhook event not queued", { workspaceId, type, error: err });
    } finally {
      clearTimeout(timer);
    }
  }

  private async enqueue(workspaceId: string, type: WebhookEventType, data: WebhookEventData) {
    const subscribed = (await this.subscribers(workspaceId)).filter((e) => e.events.includes(type));
    const event = newEvent(type, data);
    await Promise.all(
      subscribed.map((endpoint) =>
        this.deps.queue.send(firstDelivery(workspaceId, endpoint.id, event)),
      ),
    );
    return "queued" as const;
  }

  private async subscribers(workspaceId: string): Promise<Subscribers> {
    const cached = this.cache?.get(workspaceId);
    if (cached) return cached;
    const found = await this.deps.endpoints.subscribers(workspaceId);
    this.cache?.set(workspaceId, found);
    return found;
  }
}
