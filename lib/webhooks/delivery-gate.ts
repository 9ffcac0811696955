import { deferDelaySeconds } from "../limits/shares.js";
import { WorkspaceSlots } from "../limits/workspace-slots.js";
import { logger } from "../log.js";
import { count } from "../metrics.js";
import type { Queue, WebhookMessage } from "../store/queue.js";
import type { Table } from "../store/table.js";
import { WEBHOOK_CAPACITY, type WebhookCapacity } from "./capacity.js";
import { EndpointCircuits } from "./circuit.js";
import type { Attempt } from "./endpoints.js";

export const WEBHOOK_SLOT_PREFIX = "WEBHOOKSLOT#";

export interface DeliveryGateDeps {
  /** Each endpoint's lease and circuit breaker. */
  circuits: EndpointCircuits;
  /** Each workspace's share of the worker (`WEBHOOK_SLOT_PREFIX`, `perWorkspace` slots). */
  slots: WorkspaceSlots;
  /** The webhooks queue: a deferred delivery goes back to it. */
  queue: Queue<WebhookMessage>;
  /** Longest wait for an endpoint's answer (WEBHOOK_TIMEOUT_MS). */
  attemptTimeoutMs: number;
  capacity?: WebhookCapacity;
  now?: () => number;
}

/** Why an attempt could not start now, and until when at least. */
export type Blocked = { kind: "busy" | "open"; until: number };

/**
 * Thrown instead of deferring a delivery once more: it was put back `maxDeferrals` times. The
 * message fails, the queue gives it its remaining receives, then the dead-letter queue keeps it.
 */
export class DeliveryBlocked extends Error {
  constructor(message: WebhookMessage, blocked: Blocked) {
    super(
      `Webhook event ${message.eventId} to ${message.endpointId} was deferred ${message.deferrals ?? 0} times: its endpoint stayed ${blocked.kind === "open" ? "broken (circuit open)" : "busy"}`,
    );
    this.name = "DeliveryBlocked";
  }
}

/**
 * What an attempt must hold before it connects, so that one endpoint or one workspace costs only
 * its own deliveries (docs/webhooks.md#fairness): its endpoint's lease, granted only while the
 * endpoint's circuit is not open (one attempt in flight per endpoint), then one of its
 * workspace's slots of the worker. A delivery that cannot have both is deferred: sent back to the
 * queue with a growing delay, or until its endpoint's circuit lets a probe through, and this
 * receive succeeds. A deferral is not an attempt: nothing connects, nothing is logged, the
 * attempt's number and its message's receive count stay as they were.
 */
export class DeliveryGate {
  readonly attemptTimeoutMs: number;
  /** How long an attempt holds its endpoint's lease and its workspace's slot, at most. */
  readonly leaseMs: number;
  private readonly capacity: WebhookCapacity;
  private readonly now: () => number;

  constructor(private readonly deps: DeliveryGateDeps) {
    this.capacity = deps.capacity ?? WEBHOOK_CAPACITY;
    this.attemptTimeoutMs = deps.attemptTimeoutMs;
    this.leaseMs = deps.attemptTimeoutMs + (this.capacity.leaseMs - this.capacity.attemptTimeoutMs);
    this.now = deps.now ?? (() => Date.now());
  }

  /**
   * Runs `attempt` holding the endpoint's lease and a workspace slot, and records its outcome in
   * the endpoint's circuit; defers the delivery instead when either is taken, the circuit is
   * open, or `mayAttempt` is false (the invocation's turns said so).
   */
  async through(
    message: WebhookMessage,
    mayAttempt: boolean,
    attempt: () => Promise<Attempt>,
  ): Promise<Attempt | "deferred"> {
    const { circuits, slots } = this.deps;
    const { workspaceId, endpointId } = message;
    const now = this.now();
    const until = now + this.leaseMs;
    if (!mayAttempt) return this.defer(message, { kind: "busy", until });
    const gate = await circuits.acquire(workspaceId, endpointId, now, until);
    if (gate.kind !== "held") return this.defer(message, gate);
    const slot = await slots.acquire(workspaceId, now, until);
    if (!slot) {
      await circuits.release(gate.lease);
      return this.defer(message, { kind: "busy", until });
    }
    try {
      const done = await attempt().catch(async (err: unknown) => {
        // No outcome to record: the lease goes back as it was (or ends by itself, if this fails).
        await circuits.release(gate.lease).catch(() => undefined);
        throw err;
      });
      const openUntil = await circuits.settle(gate.lease, done.result === "delivered", this.now());
      if (openUntil !== undefined) {
        count("WebhookCircuitsOpened");
        logger.warn("webhook endpoint's circuit opened", {
          workspaceId,
          endpointId,
          failures: gate.lease.failures + 1,
          probe: gate.lease.probe,
          openUntil: new Date(openUntil).toISOString(),
        });
      }
      return done;
    } finally {
      await slots.release(slot).catch((err) => {
        logger.warn("webhook slot not released; its lease will end it", { ...slot, error: err });
      });
    }
  }

  /**
   * Sends the delivery back to the queue: until the open circuit lets a probe through, or after
   * `deferDelaySeconds` (growing with each deferral) while the endpoint or the workspace is busy.
   */
  private async defer(message: WebhookMessage, blocked: Blocked): Promise<"deferred"> {
    const deferrals = message.deferrals ?? 0;
    if (deferrals >= this.capacity.maxDeferrals) throw new DeliveryBlocked(message, blocked);
    const now = this.now();
    const delaySeconds =
      blocked.kind === "open"
        ? Math.max(1, Math.ceil((blocked.until - now) / 1000))
        : deferDelaySeconds(deferrals, this.capacity.deferSeconds);
    // `notBefore` carries a cool-off longer than SQS's 15-minute delay round the queue again.
    await this.deps.queue.send(
      { ...message, deferrals: deferrals + 1, notBefore: now + delaySeconds * 1000 },
      delaySeconds,
    );
    count("WebhookDeliveriesDeferred");
    return "deferred";
  }
}

/**
 * The gate the webhooks worker runs with: the capacity model's breaker and workspace share, on
 * `now` (the fairness simulation's is virtual).
 */
export const deliveryGate = (
  table: Table,
  queue: Queue<WebhookMessage>,
  attemptTimeoutMs = WEBHOOK_CAPACITY.attemptTimeoutMs,
  now?: () => number,
) =>
  new DeliveryGate({
    circuits: new EndpointCircuits(table),
    slots: new WorkspaceSlots(table, WEBHOOK_SLOT_PREFIX, WEBHOOK_CAPACITY.perWorkspace),
    queue,
    attemptTimeoutMs,
    ...(now ? { now } : {}),
  });
