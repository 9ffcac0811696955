import type { Queue, WebhookMessage } from "../store/queue.js";
import { DIGEST_EVENT_TYPE, digestEventId, digestPeriod } from "./digest.js";
import { firstDelivery } from "./emitter.js";
import type { WebhookEndpoints } from "./endpoints.js";

const INDEX_PAGE = 100;

/**
 * Queues one digest delivery per email endpoint due at `at` (its digest, `digestPeriod`), of
 * every workspace, a page of the digest index at a time; answers how many. The delivery's id is
 * the endpoint's and the period's, so a repeated run is answered from the delivery log and sends
 * nothing twice (delivery.ts). Retries, the delivery log and the circuit are the webhooks'.
 */
export async function queueDigests(
  endpoints: Pick<WebhookEndpoints, "digestIndexPage">,
  queue: Queue<WebhookMessage>,
  at: Date,
  hour: number,
): Promise<number> {
  let queued = 0;
  let cursor: string | undefined;
  do {
    const page = await endpoints.digestIndexPage(INDEX_PAGE, cursor);
    const messages = page.items.flatMap((entry) => {
      const period = digestPeriod(entry.digest, at, hour);
      if (!period) return [];
      const event = {
        eventId: digestEventId(entry.endpointId, period.until),
        type: DIGEST_EVENT_TYPE,
        occurredAt: period.until,
        data: { ...period, digest: entry.digest },
      };
      return [firstDelivery(entry.workspaceId, entry.endpointId, event)];
    });
    await queue.sendAll(messages);
    queued += messages.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return queued;
}
