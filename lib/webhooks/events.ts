/**
 * What the service tells webhook endpoints about, and the one port the domain emits through.
 * Domain code (the indexer, the crawl store, competitor events, refresh) depends on this file
 * alone, never on how deliveries are queued.
 */
export const WEBHOOK_EVENT_TYPES = [
  "source.indexed",
  "source.failed",
  "crawl.completed",
  "refresh.completed",
  "competitor.event",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Sent by `POST /api/webhooks/{id}/test` to that endpoint alone, whatever it subscribes to. */
export const TEST_EVENT_TYPE = "webhook.test";

/** The event's fields, as the payload's `data` carries them: small, plain JSON. */
export type WebhookEventData = Record<string, unknown>;

export interface WebhookEvents {
  /**
   * Queues one delivery of the event to each endpoint of the workspace subscribed to its type.
   * Never throws and returns within a few seconds: a failure is logged and the caller's work
   * goes on (the event is then not delivered).
   */
  emit(workspaceId: string, type: WebhookEventType, data: WebhookEventData): Promise<void>;
}
