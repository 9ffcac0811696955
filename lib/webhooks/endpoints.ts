import { notFound } from "../errors.js";
import { isId, newId } from "../ids.js";
import { Caps, DEFAULT_CAPS } from "../limits/caps.js";
import { equals } from "../store/conditions.js";
import { isSealed, type SealedSecret, type SecretBox } from "../store/keys.js";
import { TTL_ATTRIBUTE } from "../store/schema.js";
import { type Item, type Page, type Table, wsKey } from "../store/table.js";
import type { Digest } from "./digest.js";
import type { WebhookEventType } from "./events.js";
import { newSecret } from "./signing.js";
import { type EndpointKind, maskedAddress, maskedUrl } from "./targets.js";

/**
 * Webhook endpoints and their delivery log, all under the workspace's partition:
 *
 * - `WEBHOOK#{id}`: an endpoint, its URL, the events it subscribes to and its signing secret,
 *   sealed under a data key of the service's KMS key (`sealedSecret`, lib/store/keys.ts) and
 *   bound to the endpoint: the webhooks API seals it (KMS `GenerateDataKey`), the webhooks worker
 *   opens it to sign (`Decrypt`), nothing else can. The API shows it once, in the create's answer.
 *   Endpoints created before secrets were sealed hold it in plain text (`secret`): they still
 *   sign, and `sealPlaintextSecrets` (run by `npm run migrate-index`) seals them.
 *   A Slack or Microsoft Teams endpoint (`kind`) has no signing secret: its URL is the secret
 *   (whoever holds it can post to the channel), so the URL is sealed the same way
 *   (`sealedUrl`) and `url` keeps only its masked form, the one the API shows.
 *   An email endpoint (`kind: "email"`) sends a `digest` of competitor events to a few
 *   recipients. Addresses are personal data (they name people), so they are sealed the same way
 *   (`sealedRecipients`): a read of the table, a backup or an export shows only their masked
 *   form (`recipients`, `j…@example.com`); the webhooks worker opens them to send.
 * - `DIGESTS` / `{workspaceId}#{endpointId}`: every email endpoint of every workspace with its
 *   digest, the index the digest schedule reads (as the competitor sweep reads `COMPETITORS`).
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
/** The partition indexing every workspace's email endpoints for the digest schedule. */
export const DIGEST_INDEX = "DIGESTS";
const digestIndexKey = (workspaceId: string, id: string) => `${workspaceId}#${id}`;

export interface DigestIndexItem extends Item {
  workspaceId: string;
  endpointId: string;
  digest: Digest;
}

const logPrefix = (endpointId: string) => `WEBHOOKLOG#${endpointId}#`;
const logKey = (endpointId: string, eventId: string, attempt: number) =>
  `${logPrefix(endpointId)}${eventId}#${String(attempt).padStart(3, "0")}`;

/** The endpoint still holds this very secret in plain text (none sealed it meanwhile). */
const plainSecretIs = (secret: string) => equals("secret", secret);

export interface EndpointItem extends Item {
  workspaceId: string;
  id: string;
  /** Where deliveries go; for Slack and Teams, the masked URL only (the real one is sealed). */
  url: string;
  /** Absent on endpoints created before Slack and Teams targets existed: `webhook`. */
  kind?: EndpointKind;
  /** A Slack or Teams incoming-webhook URL, sealed like a signing secret. */
  sealedUrl?: SealedSecret;
  events: WebhookEventType[];
  description: string | null;
  /** An email endpoint's addresses (a JSON list), sealed: personal data. */
  sealedRecipients?: SealedSecret;
  /** An email endpoint's addresses, masked: what the API shows. */
  recipients?: string[];
  /** How often an email endpoint's digest goes out. */
  digest?: Digest;
  /** The signing secret, sealed under a data key of the service's KMS key. */
  sealedSecret?: SealedSecret;
  /** The signing secret in plain text: endpoints created before secrets were sealed. */
  secret?: string;
  createdAt: string;
}

/** An endpoint as the API shows it: never its secret, nor a Slack or Teams URL whole. */
export type PublicEndpoint = Pick<
  EndpointItem,
  "id" | "url" | "events" | "description" | "createdAt"
> & {
  kind: EndpointKind;
  /** Email endpoints: their masked recipients and their digest. */
  recipients?: string[];
  digest?: Digest;
};

/** A new signed webhook with its signing secret in plain text: the create's answer, shown once. */
export type SignedEndpoint = PublicEndpoint & { secret: string };
/** A new endpoint: signed webhooks carry their secret, Slack and Teams endpoints none. */
export type CreatedEndpoint = PublicEndpoint & { secret?: string };

export const toPublicEndpoint = ({
  id,
  url,
  kind,
  events,
  description,
  createdAt,
  recipients,
  digest,
}: Omit<PublicEndpoint, "kind"> & { kind?: EndpointKind | undefined }): PublicEndpoint => ({
  id,
  kind: kind ?? "webhook",
  url,
  events,
  description,
  createdAt,
  ...(recipients ? { recipients } : {}),
  ...(digest ? { digest } : {}),
});

/** What an endpoint's sealed secret is bound to: opened for another endpoint, it fails. */
const secretContext = (workspaceId: string, endpointId: string) => ({
  purpose: "webhook-signing-secret",
  workspaceId,
  endpointId,
});

/** What a Slack or Teams endpoint's sealed URL is bound to. */
const urlContext = (workspaceId: string, endpointId: string) => ({
  purpose: "webhook-target-url",
  workspaceId,
  endpointId,
});

/** What an email endpoint's sealed recipients are bound to. */
const recipientsContext = (workspaceId: string, endpointId: string) => ({
  purpose: "webhook-email-recipients",
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
  /** Where deliveries go; unused by email endpoints. */
  url: string;
  /**
   * `webhook` (signed, the default), `slack` or `teams` (formatted messages, the URL sealed),
   * `email` (a digest to `recipients`, sealed).
   */
  kind?: EndpointKind | undefined;
  recipients?: string[] | undefined;
  digest?: Digest | undefined;
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
   * Registers an endpoint, its secret (a signed webhook's signing secret, a Slack or Teams URL)
   * sealed before anything is written; a 409 `limit_reached` past MAX_ENDPOINTS. Answers a
   * signing secret in plain text, this once.
   */
  async create(
    workspaceId: string,
    input: NewEndpoint & { kind?: "webhook" | undefined },
  ): Promise<SignedEndpoint>;
  async create(workspaceId: string, input: NewEndpoint): Promise<CreatedEndpoint>;
  async create(workspaceId: string, input: NewEndpoint): Promise<CreatedEndpoint> {
    const pk = wsKey(workspaceId);
    const id = newId("webhook");
    const kind = input.kind ?? "webhook";
    const secret = kind === "webhook" ? newSecret() : undefined;
    const recipients = kind === "email" ? [...new Set(input.recipients ?? [])] : undefined;
    const sealed = secret
      ? { sealedSecret: await this.box().seal(secret, secretContext(workspaceId, id)) }
      : recipients
        ? {
            sealedRecipients: await this.box().seal(
              JSON.stringify(recipients),
              recipientsContext(workspaceId, id),
            ),
            recipients: recipients.map(maskedAddress),
            digest: input.digest ?? "daily",
          }
        : { sealedUrl: await this.box().seal(input.url, urlContext(workspaceId, id)) };
    // The workspace cap on endpoints (its counter is `COUNT_KEY`): 409 `limit_reached` when full.
    await new Caps(this.table).take(workspaceId, "webhooks");
    const item: EndpointItem = {
      pk,
      sk: endpointKey(id),
      workspaceId,
      id,
      url: secret ? input.url : recipients ? "mailto:" : maskedUrl(input.url),
      kind,
      events: [...new Set(input.events)],
      description: input.description ?? null,
      ...sealed,
      createdAt: new Date().toISOString(),
    };
    await this.table.put(item);
    if (item.digest) {
      await this.table.put({
        pk: DIGEST_INDEX,
        sk: digestIndexKey(workspaceId, id),
        workspaceId,
        endpointId: id,
        digest: item.digest,
      } satisfies DigestIndexItem);
    }
    return { ...toPublicEndpoint(item), ...(secret ? { secret } : {}) };
  }

  /** Where a delivery to the endpoint goes: a Slack or Teams URL opened from its seal. */
  async targetUrl(endpoint: EndpointItem): Promise<string> {
    if (!isSealed(endpoint.sealedUrl)) return endpoint.url;
    return this.box().open(endpoint.sealedUrl, urlContext(endpoint.workspaceId, endpoint.id));
  }

  /** An email endpoint's addresses, opened from their seal to send its digest. */
  async recipients(endpoint: EndpointItem): Promise<string[]> {
    if (!isSealed(endpoint.sealedRecipients)) return [];
    const context = recipientsContext(endpoint.workspaceId, endpoint.id);
    return JSON.parse(await this.box().open(endpoint.sealedRecipients, context)) as string[];
  }

  /** One page of every workspace's email endpoints, for the digest schedule. */
  digestIndexPage(limit: number, cursor?: string): Promise<Page<DigestIndexItem>> {
    return this.table.page<DigestIndexItem>({ pk: DIGEST_INDEX, skPrefix: "", limit, cursor });
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
    await this.table.delete(DIGEST_INDEX, digestIndexKey(workspaceId, id));
  }

  /**
   * Every endpoint of the workspace with what it subscribes to (at most MAX_ENDPOINTS); email
   * endpoints receive digests on their schedule, never an event as it happens.
   */
  async subscribers(workspaceId: string): Promise<Array<Pick<EndpointItem, "id" | "events">>> {
    const all = await this.table.all<EndpointItem>(wsKey(workspaceId), ENDPOINT_PREFIX, [
      "id",
      "events",
      "kind",
    ]);
    return all.filter((endpoint) => endpoint.kind !== "email");
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
