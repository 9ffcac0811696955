import { randomUUID } from "node:crypto";
import { and, atMost, equals, lessThan, missing, or } from "../store/conditions.js";
import { TTL_ATTRIBUTE } from "../store/schema.js";
import { type Item, type Table, wsKey } from "../store/table.js";
import { WEBHOOK_CAPACITY } from "./capacity.js";

/**
 * Each endpoint's gate, one item per endpoint in the workspace's partition
 * (`WEBHOOKCIRCUIT#{endpointId}`), written only here and always by one single-item conditional
 * write (docs/webhooks.md#fairness):
 *
 * - a lease: at most one delivery attempt in flight per endpoint, across every worker invocation.
 *   It lasts the attempt's timeout plus a margin, so a worker that dies holding it blocks its
 *   endpoint that long at most;
 * - a circuit breaker: `threshold` consecutive failed attempts open the circuit until `openUntil`
 *   (a cool-off that doubles each time it opens again, up to the most). While it is open no
 *   lease is granted, so nothing connects; once it has passed, the next lease is the half-open
 *   probe (the lease makes it the only one), whose success closes the circuit.
 *
 * Only the lease's holder records an outcome, so reading the counters when the lease is taken
 * and writing them back under the holder's condition loses no failure. The item's time to live is
 * renewed by every write: a deleted endpoint's gate goes with time.
 */

interface CircuitItem extends Item {
  /** The attempt holding the lease, until `leaseUntil` (epoch ms). */
  holder?: string;
  leaseUntil?: number;
  /** Consecutive failed attempts. */
  failures?: number;
  /** Times the circuit opened since it last closed: the next cool-off doubles with them. */
  openings?: number;
  /** Epoch ms until which the circuit is open; 0 once closed. */
  openUntil?: number;
}

/** An endpoint's lease, with its circuit's counters as they were when it was taken. */
export interface EndpointLease {
  workspaceId: string;
  endpointId: string;
  holder: string;
  failures: number;
  openings: number;
  /** This attempt is the half-open probe of a circuit whose cool-off has passed. */
  probe: boolean;
}

/** What asking for an endpoint's lease gave: it, or why not and until when at least. */
export type Gate =
  | { kind: "held"; lease: EndpointLease }
  | { kind: "busy"; until: number }
  | { kind: "open"; until: number };

export interface BreakerPolicy {
  threshold: number;
  coolOffMs: number;
  maxCoolOffMs: number;
}

export type CircuitState = "closed" | "open" | "half_open";

/** An endpoint's circuit as the API shows it. */
export interface PublicCircuit {
  state: CircuitState;
  consecutiveFailures: number;
  /** When an open circuit lets its next probe through; null unless open. */
  openUntil: string | null;
}

const CIRCUIT_PREFIX = "WEBHOOKCIRCUIT#";
const circuitKey = (endpointId: string) => `${CIRCUIT_PREFIX}${endpointId}`;
/** The gate of an endpoint unused this long (or deleted) is removed by DynamoDB. */
const KEEP_SECONDS = 30 * 86_400;
const expiry = (now: number) => Math.floor(now / 1000) + KEEP_SECONDS;

/** The cool-off after the circuit's `openings`-th opening in a row. */
export const coolOffMs = (openings: number, policy: BreakerPolicy) =>
  Math.min(policy.maxCoolOffMs, policy.coolOffMs * 2 ** Math.max(0, openings - 1));

export class EndpointCircuits {
  constructor(
    private readonly table: Table,
    private readonly policy: BreakerPolicy = WEBHOOK_CAPACITY.breaker,
  ) {}

  /**
   * Takes the endpoint's lease until `until` (epoch ms) when no attempt holds it and its circuit
   * is not open; otherwise answers which of the two stood in the way, and until when.
   */
  async acquire(
    workspaceId: string,
    endpointId: string,
    now: number,
    until: number,
  ): Promise<Gate> {
    const holder = randomUUID();
    const held = await this.table.change<CircuitItem>(wsKey(workspaceId), circuitKey(endpointId), {
      set: { holder, leaseUntil: until, [TTL_ATTRIBUTE]: expiry(now) },
      condition: and(
        or(missing("holder"), lessThan("leaseUntil", now)),
        or(missing("openUntil"), atMost("openUntil", now)),
      ),
      upsert: true,
    });
    if (held) {
      const failures = held.failures ?? 0;
      return {
        kind: "held",
        lease: {
          workspaceId,
          endpointId,
          holder,
          failures,
          openings: held.openings ?? 0,
          probe: failures >= this.policy.threshold,
        },
      };
    }
    const item = await this.table.get<CircuitItem>(wsKey(workspaceId), circuitKey(endpointId));
    if (item?.openUntil && item.openUntil > now) return { kind: "open", until: item.openUntil };
    // Held by another attempt (or, rarely, given back since: the caller tries again soon).
    return { kind: "busy", until: item?.leaseUntil ?? now };
  }

  /**
   * Records how the lease's attempt went and gives the lease back: a delivery closes the circuit;
   * a failure counts, and the `threshold`-th in a row (or a failed probe) opens it. Answers the
   * time the circuit opened until, when it did. Nothing changes if the lease ran out and another
   * attempt holds it now.
   */
  async settle(lease: EndpointLease, delivered: boolean, now: number): Promise<number | undefined> {
    const failures = delivered ? 0 : lease.failures + 1;
    const opens = failures >= this.policy.threshold;
    const openings = opens ? lease.openings + 1 : delivered ? 0 : lease.openings;
    const openUntil = opens ? now + coolOffMs(openings, this.policy) : 0;
    await this.table.change(wsKey(lease.workspaceId), circuitKey(lease.endpointId), {
      set: { failures, openings, openUntil, [TTL_ATTRIBUTE]: expiry(now) },
      remove: ["holder", "leaseUntil"],
      condition: equals("holder", lease.holder),
    });
    return opens ? openUntil : undefined;
  }

  /** Gives the lease back without an attempt: the counters stay as they were. */
  async release(lease: EndpointLease): Promise<void> {
    await this.table.change(wsKey(lease.workspaceId), circuitKey(lease.endpointId), {
      remove: ["holder", "leaseUntil"],
      condition: equals("holder", lease.holder),
    });
  }

  /**
   * Reads the circuits of some of a workspace's endpoints at once; answers each one's by its
   * endpoint's id (closed when it never failed).
   */
  async view(
    workspaceId: string,
    endpointIds: string[],
    now: number,
  ): Promise<(endpointId: string) => PublicCircuit> {
    const items = await this.table.getMany<CircuitItem>(
      wsKey(workspaceId),
      endpointIds.map(circuitKey),
    );
    const byId = new Map(items.map((item) => [item.sk.slice(CIRCUIT_PREFIX.length), item]));
    return (endpointId) => this.toPublic(byId.get(endpointId), now);
  }

  private toPublic(item: CircuitItem | undefined, now: number): PublicCircuit {
    const failures = item?.failures ?? 0;
    const openUntil = item?.openUntil ?? 0;
    const state: CircuitState =
      openUntil > now ? "open" : failures >= this.policy.threshold ? "half_open" : "closed";
    return {
      state,
      consecutiveFailures: failures,
      openUntil: state === "open" ? new Date(openUntil).toISOString() : null,
    };
  }
}
