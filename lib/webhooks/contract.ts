import { createRoute, z } from "@hono/zod-openapi";
import {
  commonErrors,
  cursorParam,
  displayText,
  ErrorSchema,
  IdempotencyHeaders,
  idempotencyErrors,
  jsonBody,
  jsonResponse,
  limitParam,
  NoQuery,
  pageOf,
} from "../http/schemas.js";
import { MAX_URL_LENGTH } from "../web/url.js";
import { WEBHOOK_CAPACITY } from "./capacity.js";
import { DIGESTS } from "./digest.js";
import { MAX_ENDPOINTS } from "./endpoints.js";
import { TEST_EVENT_TYPE, WEBHOOK_EVENT_TYPES } from "./events.js";
import { ENDPOINT_KINDS, MAX_RECIPIENTS, URL_KINDS } from "./targets.js";

const tags = ["Webhooks"];

const EndpointFields = {
  id: z.string().openapi({ example: "wh_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
  kind: z.enum(ENDPOINT_KINDS).openapi({
    description:
      "`webhook`: signed Standard Webhooks deliveries; `slack` or `teams`: an incoming-webhook URL that receives a formatted message (severity, change, competitor, brief, a link to the event in the console); `email`: a daily or weekly digest of competitor events sent to `recipients`",
  }),
  url: z.string().openapi({
    example: "https://hooks.example.com/kb",
    description:
      "The endpoint's URL; for `slack` and `teams`, its origin only (`https://hooks.slack.com/…`): the rest is its secret, kept encrypted; for `email`, `mailto:`",
  }),
  recipients: z.array(z.string()).optional().openapi({
    description:
      "`email` endpoints: their recipients, masked (`j…@example.com`); the addresses are kept encrypted",
  }),
  digest: z.enum(DIGESTS).optional().openapi({
    description: "`email` endpoints: how often the digest goes out",
  }),
  events: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
  description: z.string().nullable(),
  createdAt: z.string().openapi({ format: "date-time" }),
};

const CircuitSchema = z
  .strictObject({
    state: z.enum(["closed", "open", "half_open"]).openapi({
      description: `\`open\`: ${WEBHOOK_CAPACITY.breaker.threshold} attempts in a row failed (or the last probe did), and deliveries wait without connecting until \`openUntil\`; \`half_open\`: the wait is over and the next delivery is a probe, whose success closes the circuit`,
    }),
    consecutiveFailures: z.number().int().openapi({ description: "Failed attempts in a row" }),
    openUntil: z.string().nullable().openapi({
      format: "date-time",
      description: "When an open circuit lets its probe through; null unless open",
    }),
  })
  .openapi("WebhookCircuit", {
    description:
      "The endpoint's circuit breaker: an endpoint that keeps failing is left alone for a growing cool-off instead of holding deliveries (docs/webhooks.md)",
  });

export const EndpointSchema = z
  .strictObject({ ...EndpointFields, circuit: CircuitSchema })
  .openapi("WebhookEndpoint");

const CreatedEndpointSchema = z
  .strictObject({
    ...EndpointFields,
    secret: z.string().optional().openapi({
      example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      description:
        "The signing secret, shown this once: verify each delivery's `webhook-signature` with it. Absent from an idempotent replay of the create (same `Idempotency-Key`)",
    }),
  })
  .openapi("WebhookEndpointCreated");

const AttemptSchema = z
  .strictObject({
    eventId: z.string().openapi({
      description: "The `webhook-id` header",
      example: "msg_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
    }),
    type: z.string().openapi({ example: "source.indexed" }),
    attempt: z.number().int().openapi({ description: "1 for the first attempt" }),
    result: z.enum(["delivered", "retrying", "dead_lettered"]).openapi({
      description:
        "`retrying`: failed, another attempt is queued for `nextAttemptAt`; `dead_lettered`: the last attempt failed",
    }),
    statusCode: z.number().int().nullable().openapi({ description: "Null when no answer came" }),
    error: z.string().nullable(),
    response: z.string().nullable().openapi({ description: "The start of the endpoint's answer" }),
    durationMs: z.number().int(),
    attemptedAt: z.string().openapi({ format: "date-time" }),
    nextAttemptAt: z.string().nullable().openapi({ format: "date-time" }),
  })
  .openapi("WebhookAttempt");

const EndpointId = z.object({
  id: z
    .string()
    .openapi({ param: { name: "id", in: "path" }, example: "wh_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
});

/** What every kind of endpoint takes. */
const endpointFields = {
  events: z
    .array(z.enum(WEBHOOK_EVENT_TYPES))
    .min(1)
    .openapi({ description: "The event types to receive", example: ["source.indexed"] }),
  description: displayText(200, "A label for the endpoint").optional(),
};

export const createWebhook = createRoute({
  method: "post",
  path: "/api/webhooks",
  operationId: "createWebhook",
  tags,
  summary: "Register a webhook endpoint",
  description: `Events are POSTed to \`url\` as Standard Webhooks: a JSON body \`{type, timestamp, data}\` with \`webhook-id\`, \`webhook-timestamp\` and \`webhook-signature\` headers. With \`kind\` \`slack\` or \`teams\`, \`url\` is a channel's incoming-webhook URL: each event arrives as a formatted message (no signature; the URL is the secret, kept encrypted and shown masked). With \`kind\` \`email\`, \`recipients\` (1 to ${MAX_RECIPIENTS} addresses, kept encrypted and shown masked) receive a \`daily\` or \`weekly\` \`digest\` of the period's competitor events instead of each event, and \`url\` is not given (400 otherwise). A signed webhook's answer carries the signing secret, shown only this once: the service keeps it encrypted under its KMS key and never shows it again. A retry with the same \`Idempotency-Key\` (within 24 hours) answers the same body without \`secret\`, even once the endpoint is deleted: a client that lost the first answer deletes the endpoint and registers a new one. The URL must be a public http(s) address (checked again on every delivery). At most ${MAX_ENDPOINTS} endpoints per workspace (409 \`limit_reached\` beyond, until one is deleted).`,
  request: {
    headers: IdempotencyHeaders,
    query: NoQuery,
    // Two shapes told apart by `kind`, so the reference says which fields go with which kind.
    body: jsonBody(
      z.discriminatedUnion("kind", [
        z.strictObject({
          url: z.string().trim().min(1).max(MAX_URL_LENGTH).openapi({
            description: "The endpoint, or the channel's incoming-webhook URL",
          }),
          kind: z.enum(URL_KINDS).optional().openapi({
            description:
              "`webhook` (the default), or `slack` or `teams` for a channel's incoming-webhook URL",
          }),
          ...endpointFields,
        }),
        z.strictObject({
          kind: z.literal("email").openapi({ description: "A digest by email" }),
          recipients: z
            .array(z.email().max(254))
            .min(1)
            .max(MAX_RECIPIENTS)
            .openapi({
              description: `1 to ${MAX_RECIPIENTS} addresses`,
              example: ["marketing@example.com"],
            }),
          digest: z.enum(DIGESTS).optional().openapi({
            description: "`daily` (the default) or `weekly` (Mondays); sent at DIGEST_HOUR UTC",
          }),
          ...endpointFields,
        }),
      ]),
    ),
  },
  responses: {
    201: jsonResponse(CreatedEndpointSchema, "Registered"),
    ...idempotencyErrors,
    409: jsonResponse(
      ErrorSchema,
      "The workspace has as many endpoints as it may (`limit_reached`; `details.cap`, `details.limit`; nothing is created), or a request with this `Idempotency-Key` is still being answered (`idempotency_key_in_use`)",
    ),
    ...commonErrors,
  },
});

export const listWebhooks = createRoute({
  method: "get",
  path: "/api/webhooks",
  operationId: "listWebhooks",
  tags,
  summary: "List webhook endpoints, newest first",
  request: { query: z.strictObject({ limit: limitParam(20, 100), cursor: cursorParam }) },
  responses: {
    200: jsonResponse(pageOf("webhooks", EndpointSchema), "One page of endpoints"),
    ...commonErrors,
  },
});

export const getWebhook = createRoute({
  method: "get",
  path: "/api/webhooks/{id}",
  operationId: "getWebhook",
  tags,
  summary: "Get one webhook endpoint (without its secret)",
  request: { params: EndpointId, query: NoQuery },
  responses: { 200: jsonResponse(EndpointSchema, "The endpoint"), ...commonErrors },
});

export const deleteWebhook = createRoute({
  method: "delete",
  path: "/api/webhooks/{id}",
  operationId: "deleteWebhook",
  tags,
  summary: "Remove a webhook endpoint",
  description: "Deliveries still queued for it are dropped.",
  request: { params: EndpointId, query: NoQuery },
  responses: { 204: { description: "Removed" }, ...commonErrors },
});

export const listDeliveries = createRoute({
  method: "get",
  path: "/api/webhooks/{id}/deliveries",
  operationId: "listWebhookDeliveries",
  tags,
  summary: "The endpoint's delivery log",
  description:
    "One entry per attempt, newest event first and its attempts newest first; kept 30 days.",
  request: {
    params: EndpointId,
    query: z.strictObject({ limit: limitParam(20, 100), cursor: cursorParam }),
  },
  responses: {
    200: jsonResponse(pageOf("deliveries", AttemptSchema), "One page of attempts"),
    ...commonErrors,
  },
});

export const testWebhook = createRoute({
  method: "post",
  path: "/api/webhooks/{id}/test",
  operationId: "testWebhook",
  tags,
  summary: "Send a test event to the endpoint",
  description: `Queues a \`${TEST_EVENT_TYPE}\` event for this endpoint alone, delivered and retried like any other; its attempts show in the delivery log.`,
  request: { params: EndpointId, query: NoQuery },
  responses: {
    202: jsonResponse(
      z.strictObject({ eventId: z.string(), type: z.literal(TEST_EVENT_TYPE) }),
      "Queued",
    ),
    ...commonErrors,
  },
});

export const webhooksContract = [
  createWebhook,
  listWebhooks,
  getWebhook,
  deleteWebhook,
  listDeliveries,
  testWebhook,
];
