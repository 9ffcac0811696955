import { notFound } from "../errors.js";
import { isId, newId } from "../ids.js";
import { Caps, DEFAULT_CAPS } from "../limits/caps.js";
import { equals } from "../store/conditions.js";
import { isSealed, type SealedSecret, type SecretBox } from "../store/keys.js";
import { TTL_ATTRIBUTE } from "../store/schema.js";
import { type Item, type Page, type Table, wsKey } from "../store/table.js";
import type { WebhookEventType } from "./events.js";
import { newSecret } from "./signing.js";

/**
 * Webhook endpoints and their delivery log, all under the workspace's partition:
 *
 * - `WEBHOOK#{id}`: an endpoint, its URL, the events it subscribes to and its signing secret,
 *   sealed under a data key of the service's KMS key (`sealedSecret`, lib/store/keys.ts) and
 *   bound to the endpoint: the webhooks API seals it (KMS `GenerateDataKey`), the webhooks worker
 *   opens it to sign (`Decrypt`), nothing else can. The API shows it once, in the create's answer.
 *   Endpoints created before secrets were sealed hold it in plain text (`secret`): they still
 *   sign, and `sealPlaintextSecrets` (run by `npm run migrate-index`) seals them.
 * - `WEBHOOKCOUNT`: how many endpoints the workspace has, bumped under a condition so concurrent
 *   creations cannot pass the limit together.
 * - `WEBHOOKLOG#{endpointId}#{eventId}#{attempt}`: one per delivery attempt, kept 30 days. Event
 *   ids sort by time, so the log read backwards is newest event first, its attempts newest first.
 */

export const MAX_ENDPOINTS = DEFAULT_CAPS.webhooks;
/** How long the delivery log keeps an attempt. */
const LOG_DAYS = 30;

const ENDPOINT_PREFIX = "WEBHOOK#";
const COUNT_KEY = "WEBHOOKCOUNT";
const endpointKey = (id: string) => `${ENDPOINT_PREFIX}${id}`;
const logPrefix = (endpointId: string) => `WEBHOOKLOG#${endpointId}#`;
const logKey = (endpointId: string, eventId: string, attempt: number) =>
  `${logPrefix(endpointId)}${eventId}#${String(attempt).padStart(3, "0")}`;

/** The endpoint still holds this very secret in plain text (none sealed it meanwhile). */
const plainSecretIs = (secret: string) => equals("secret", secret);

export interface EndpointItem extends Item {
  workspaceId: string;
  id: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  /** The signing secret, sealed under a data key of the service's KMS key. */
  sealedSecret?: SealedSecret;
  /** The signing secret in plain text: endpoints created before secrets were sealed. */
  secret?: string;
  createdAt: string;
}

/** An endpoint as the API shows it: never its secret. */
export type PublicEndpoint = Pick<
  EndpointItem,
  "id" | "url" | "events" | "description" | "createdAt"
>;

/** A new endpoint with its signing secret in plain text: the create's answer, shown once. */
export type CreatedEndpoint = PublicEndpoint & { secret: string };

export const toPublicEndpoint = ({
  id,
  url,
  events,
  description,
  createdAt,
}: PublicEndpoint): PublicEndpoint => ({
  id,
  url,
  events,
  description,
  createdAt,
});

/** What an endpoint's sealed secret is bound to: opened for another endpoint, it fails. */
const secretContext = (workspaceId: string, endpointId: string) => ({
  purpose: "webhook-signing-secret",
  workspaceId,
  endpointId,
});

/** How one attempt ended: delivered, failed with another attempt queued, or failed for good. */
export type AttemptResult = "delivered" | "retrying" | "dead_lettered";

export interface Attempt {
  eventId: string;
  type: string;
  attempt: number;
  result: AttemptResult;
  /** The endpoint's HTTP status; null when no answer came (refused, unreachable, timed out). */
  statusCode: number | null;
  error: string | null;
  /** The start of the endpoint's answer, for debugging. */
  response: string | null;
  durationMs: number;
  attemptedAt: string;
  nextAttemptAt: string | null;
}

interface AttemptItem extends Item, Attempt {
  endpointId: string;
}

export const toPublicAttempt = (item: AttemptItem): Attempt => ({
  eventId: item.eventId,
  type: item.type,
  attempt: item.attempt,
  result: item.result,
  statusCode: item.statusCode,
  error: item.error,
  response: item.response,
  durationMs: item.durationMs,
  attemptedAt: item.attemptedAt,
  nextAttemptAt: item.nextAttemptAt,
});

export interface NewEndpoint {
  url: string;
  events: WebhookEventType[];
  description?: string | undefined;
}

export class WebhookEndpoints {
  constructor(
    private readonly table: Table,
    /**
     * Seals and opens signing secrets: needed to create endpoints (the webhooks API) and to sign
     * deliveries (the webhooks worker); the emitters only read subscriptions and go without.
     */
    private readonly secrets?: SecretBox,
  ) {}

  private box(): SecretBox {
    if (!this.secrets) throw new Error("Webhook secrets need the KMS key: pass a SecretBox");
    return this.secrets;
  }

  /**
   * Registers an endpoint with a new secret, sealed before anything is written; a 409
   * `limit_reached` past MAX_ENDPOINTS. Answers the secret in plain text, this once.
   */
  async create(workspaceId: string, input: NewEndpoint): Promise<CreatedEndpoint> {
    const pk = wsKey(workspaceId);
    const id = newId("webhook");
    const secret = newSecret();
    const sealedSecret = await this.box().seal(secret, secretContext(workspaceId, id));
    // The workspace cap on endpoints (its counter is `COUNT_KEY`): 409 `limit_reached` when full.
    await new Caps(this.table).take(workspaceId, "webhooks");
    const item: EndpointItem = {
      pk,
      sk: endpointKey(id),
      workspaceId,
      id,
      url: input.url,
      events: [...new Set(input.events)],
      description: input.description ?? null,
      sealedSecret,
      createdAt: new Date().toISOString(),
    };
    await this.table.put(item);
    return { ...toPublicEndpoint(item), secret };
  }

  /** The endpoint's signing secret in plain text, to sign a delivery with. */
  async signingSecret(endpoint: EndpointItem): Promise<string> {
    if (isSealed(endpoint.sealedSecret)) {
      const context = secretContext(endpoint.workspaceId, endpoint.id);
      return this.box().open(endpoint.sealedSecret, context);
    }
    if (endpoint.secret) return endpoint.secret;
    throw new Error(`Webhook endpoint ${endpoint.id} holds no signing secret`);
  }

  /**
   * Seals the secrets a workspace's endpoints still hold in plain text (created before secrets
   * were sealed), each write conditional on the plain secret being the one sealed; answers how
   * many it sealed. Safe to run twice, and while deliveries sign with them.
   */
  async sealPlaintextSecrets(workspaceId: string): Promise<number> {
    const endpoints = await this.table.all<EndpointItem>(wsKey(workspaceId), ENDPOINT_PREFIX);
    let sealed = 0;
    for (const endpoint of endpoints) {
      if (!endpoint.secret) continue;
      const sealedSecret = await this.box().seal(
        endpoint.secret,
        secretContext(workspaceId, endpoint.id),
      );
      const done = await this.table.change(endpoint.pk, endpoint.sk, {
        set: { sealedSecret },
        remove: ["secret"],
        condition: plainSecretIs(endpoint.secret),
      });
      if (done) sealed++;
    }
    return sealed;
  }

  list(workspaceId: string, limit: number, cursor?: string): Promise<Page<EndpointItem>> {
    return this.table.page<EndpointItem>({
      pk: wsKey(workspaceId),
      skPrefix: ENDPOINT_PREFIX,
      limit,
      cursor,
      newestFirst: true,
    });
  }

  /** The endpoint, or undefined when the workspace has none of that id. */
  async find(workspaceId: string, id: string): Promise<EndpointItem | undefined> {
    return isId("webhook", id)
      ? this.table.get<EndpointItem>(wsKey(workspaceId), endpointKey(id))
      : undefined;
  }

  async get(workspaceId: string, id: string): Promise<EndpointItem> {
    const item = await this.find(workspaceId, id);
    if (!item) throw notFound("webhook endpoint", id);
    return item;
  }

  /** Removes the endpoint: its queued deliveries are dropped, its log expires with time. */
  async delete(workspaceId: string, id: string): Promise<void> {
    const pk = wsKey(workspaceId);
    if (!isId("webhook", id) || !(await this.table.delete(pk, endpointKey(id)))) {
      throw notFound("webhook endpoint", id);
    }
    await this.table.decrement(pk, COUNT_KEY, "count", 1);
  }

  /** Every endpoint of the workspace with what it subscribes to (at most MAX_ENDPOINTS). */
  subscribers(workspaceId: string): Promise<Array<Pick<EndpointItem, "id" | "events">>> {
    return this.table.all<EndpointItem>(wsKey(workspaceId), ENDPOINT_PREFIX, ["id", "events"]);
  }

  deliveries(workspaceId: string, endpointId: string, limit: number, cursor?: string) {
    return this.table.page<AttemptItem>({
      pk: wsKey(workspaceId),
      skPrefix: logPrefix(endpointId),
      limit,
      cursor,
      newestFirst: true,
    });
  }

  /** The logged outcome of one attempt at one event, if it was logged. */
  attempt(workspaceId: string, endpointId: string, eventId: string, attempt: number) {
    return this.table.get<AttemptItem>(wsKey(workspaceId), logKey(endpointId, eventId, attempt));
  }

  async record(workspaceId: string, endpointId: string, attempt: Attempt): Promise<void> {
    await this.table.put({
      pk: wsKey(workspaceId),
      sk: logKey(endpointId, attempt.eventId, attempt.attempt),
      endpointId,
      ...attempt,
      [TTL_ATTRIBUTE]: Math.floor(Date.now() / 1000) + LOG_DAYS * 86_400,
    });
  }
}
