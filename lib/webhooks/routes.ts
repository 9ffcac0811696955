import { invalid } from "../errors.js";
import { createModule } from "../http/app.js";
import { keepForReplay } from "../http/idempotency.js";
import type { Queue, WebhookMessage } from "../store/queue.js";
import { FetchError } from "../web/errors.js";
import { checkUrl } from "../web/url.js";
import type { EndpointCircuits } from "./circuit.js";
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  testWebhook,
} from "./contract.js";
import { firstDelivery, newEvent } from "./emitter.js";
import {
  type EndpointItem,
  toPublicAttempt,
  toPublicEndpoint,
  type WebhookEndpoints,
} from "./endpoints.js";
import { TEST_EVENT_TYPE } from "./events.js";

export interface WebhooksRoutesDeps {
  endpoints: WebhookEndpoints;
  queue: Queue<WebhookMessage>;
  /** ALLOW_PRIVATE_URLS: lets endpoints be loopback and private hosts (development and tests). */
  allowPrivate: boolean;
  /** Each endpoint's circuit breaker, shown with it. */
  circuits: EndpointCircuits;
}

/**
 * The endpoint's URL as given (a receiver may need its exact path and query), refused as every
 * fetched URL is when it names a private address or a local host: a 400 on `url`.
 */
function endpointUrl(input: string, allowPrivate: boolean): string {
  try {
    return checkUrl(input, { allowPrivate }).href;
  } catch (err) {
    if (!(err instanceof FetchError)) throw err;
    throw invalid(err.message, { issues: [{ path: "url", message: err.message }] });
  }
}

/** Webhook endpoints, their delivery logs and test events: /api/webhooks/* */
export function webhooksRoutes({ endpoints, queue, allowPrivate, circuits }: WebhooksRoutesDeps) {
  const app = createModule();

  /** Endpoints as the API shows them, each with its circuit (one read for all of them). */
  const withCircuits = async (workspaceId: string, items: EndpointItem[]) => {
    const circuitOf = await circuits.view(
      workspaceId,
      items.map((item) => item.id),
      Date.now(),
    );
    return items.map((item) => ({ ...toPublicEndpoint(item), circuit: circuitOf(item.id) }));
  };

  app.openapi(createWebhook, async (c) => {
    const body = c.req.valid("json");
    const url = body.kind === "email" ? "mailto:" : endpointUrl(body.url, allowPrivate);
    const created = await endpoints.create(c.get("workspaceId"), { ...body, url });
    // The secret is shown this once: a replay of the create by its Idempotency-Key answers without it.
    keepForReplay(c, toPublicEndpoint(created));
    return c.json(created, 201);
  });

  app.openapi(listWebhooks, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const workspaceId = c.get("workspaceId");
    const page = await endpoints.list(workspaceId, limit, cursor);
    const webhooks = await withCircuits(workspaceId, page.items);
    return c.json({ webhooks, nextCursor: page.nextCursor }, 200);
  });

  app.openapi(getWebhook, async (c) => {
    const workspaceId = c.get("workspaceId");
    const item = await endpoints.get(workspaceId, c.req.valid("param").id);
    const [shown] = await withCircuits(workspaceId, [item]);
    return c.json(shown, 200);
  });

  app.openapi(deleteWebhook, async (c) => {
    await endpoints.delete(c.get("workspaceId"), c.req.valid("param").id);
    return c.body(null, 204);
  });

  app.openapi(listDeliveries, async (c) => {
    const workspaceId = c.get("workspaceId");
    const { id } = c.req.valid("param");
    const { limit, cursor } = c.req.valid("query");
    await endpoints.get(workspaceId, id);
    const page = await endpoints.deliveries(workspaceId, id, limit, cursor);
    return c.json(
      { deliveries: page.items.map(toPublicAttempt), nextCursor: page.nextCursor },
      200,
    );
  });

  app.openapi(testWebhook, async (c) => {
    const workspaceId = c.get("workspaceId");
    const endpoint = await endpoints.get(workspaceId, c.req.valid("param").id);
    const event = newEvent(TEST_EVENT_TYPE, {
      endpointId: endpoint.id,
      message: "A test event sent from the API",
    });
    await queue.send(firstDelivery(workspaceId, endpoint.id, event));
    return c.json({ eventId: event.eventId, type: TEST_EVENT_TYPE }, 202);
  });

  return app;
}
