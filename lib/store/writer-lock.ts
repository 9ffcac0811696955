import { randomUUID } from "node:crypto";
import { DeleteCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { equals } from "./conditions.js";
import { TTL_ATTRIBUTE } from "./schema.js";
import { isConditionFailure, type Table, wsKey } from "./table.js";

/**
 * One writer per workspace at a time. LanceDB commits a write by putting the next manifest
 * version; on S3 without conditional writes (s3rver, and any store where the engine cannot ask for
 * put-if-absent) two writers can put the same version and one commit vanishes without an error.
 * Every write to a workspace's index therefore runs inside `withLock`.
 */
export interface WriterLock {
  withLock<T>(workspaceId: string, fn: () => Promise<T>): Promise<T>;
}

/** The lease could not be taken within `waitMs`: another writer held it all that time. */
export class WriterLockTimeout extends Error {
  constructor(workspaceId: string, waitMs: number) {
    super(`The search index writer lock of ${workspaceId} stayed busy for ${waitMs} ms`);
    this.name = "WriterLockTimeout";
  }
}

/**
 * The lease expired or was taken while the write ran (a renewal found another owner): another
 * writer may have committed at the same time, so the write must be retried (it is idempotent).
 */
export class WriterLockLost extends Error {
  constructor(workspaceId: string) {
    super(`The search index writer lock of ${workspaceId} was lost during the write`);
    this.name = "WriterLockLost";
  }
}

export interface LeaseOptions {
  /** How long a lease lasts without renewal; a crashed writer blocks others this long at most. */
  leaseMs?: number;
  /** How often a holder renews its lease while its write runs (default a third of `leaseMs`). */
  renewEveryMs?: number;
  /** How long `withLock` waits for a busy lease before it gives up. */
  waitMs?: number;
}

const LEASE_SK = "SEARCH#WRITER";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A lease in the service's DynamoDB table, one item per workspace (`WS#<id>` / `SEARCH#WRITER`)
 * holding its owner and expiry. Taken by a conditional put that succeeds only when no lease exists
 * or the existing one has expired; renewed while held by an update conditioned on the owner;
 * released by a delete conditioned on the owner, so a writer whose lease expired and was taken
 * over can never delete its successor's. DynamoDB's time to live removes leases left by crashes.
 *
 * A lease is time-based: a holder paused for longer than `leaseMs` (it is renewed every third of
 * it) may overlap the next holder. It then learns so at its next renewal and `withLock` throws
 * `WriterLockLost` after its write, so the caller retries it.
 */
export class DynamoWriterLock implements WriterLock {
  private readonly leaseMs: number;
  private readonly renewEveryMs: number;
  private readonly waitMs: number;

  constructor(
    private readonly table: Table,
    options: LeaseOptions = {},
  ) {
    // Short, renewed every 5 s while held: a writer that crashes holding it (a killed process, a
    // timed-out Lambda) blocks the workspace's next writes for 15 s at most.
    this.leaseMs = options.leaseMs ?? 15_000;
    this.renewEveryMs = options.renewEveryMs ?? Math.floor(this.leaseMs / 3);
    this.waitMs = options.waitMs ?? 120_000;
  }

  /**
   * Writers of one workspace in this process take turns here before the lease: the next starts
   * the moment the last ends, instead of polling the table with growing sleeps (five records of
   * one batch would otherwise wait up to a second each for nothing).
   */
  private readonly turns = new Map<string, Promise<unknown>>();

  withLock<T>(workspaceId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.turns.get(workspaceId) ?? Promise.resolve();
    const run = previous.then(() => this.withLease(workspaceId, fn));
    const done = run.catch(() => undefined);
    this.turns.set(workspaceId, done);
    void done.then(() => {
      if (this.turns.get(workspaceId) === done) this.turns.delete(workspaceId);
    });
    return run;
  }

  private async withLease<T>(workspaceId: string, fn: () => Promise<T>): Promise<T> {
    const owner = randomUUID();
    await this.acquire(workspaceId, owner);
    let lost = false;
    const renewal = setInterval(() => {
      this.renew(workspaceId, owner).then(
        (held) => {
          lost ||= !held;
        },
        () => {
          // A failed renewal call is retried at the next tick; the lease is still ours until it
          // expires, and a renewal that finds another owner marks it lost.
        },
      );
    }, this.renewEveryMs);
    try {
      const result = await fn();
      if (lost) throw new WriterLockLost(workspaceId);
      return result;
    } finally {
      clearInterval(renewal);
      await this.release(workspaceId, owner);
    }
  }

  private async acquire(workspaceId: string, owner: string): Promise<void> {
    const deadline = Date.now() + this.waitMs;
    for (let attempt = 0; ; attempt++) {
      const now = Date.now();
      try {
        await this.table.doc.send(
          new PutCommand({
            TableName: this.table.name,
            Item: this.lease(workspaceId, owner, now),
            ConditionExpression: "attribute_not_exists(pk) OR expires_at < :now",
            ExpressionAttributeValues: { ":now": now },
          }),
        );
        return;
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
      }
      if (Date.now() >= deadline) throw new WriterLockTimeout(workspaceId, this.waitMs);
      // Jittered, growing waits: writers of one workspace do not retry in step.
      const ceiling = Math.min(1000, 25 * 2 ** Math.min(attempt, 6));
      await sleep(ceiling / 2 + Math.random() * (ceiling / 2));
    }
  }

  private async renew(workspaceId: string, owner: string): Promise<boolean> {
    const { expires_at, [TTL_ATTRIBUTE]: ttl } = this.lease(workspaceId, owner, Date.now());
    const renewed = await this.table.update(
      wsKey(workspaceId),
      LEASE_SK,
      { expires_at, [TTL_ATTRIBUTE]: ttl },
      equals("owner", owner),
    );
    return renewed !== undefined;
  }

  private async release(workspaceId: string, owner: string): Promise<void> {
    try {
      await this.table.doc.send(
        new DeleteCommand({
          TableName: this.table.name,
          Key: { pk: wsKey(workspaceId), sk: LEASE_SK },
          ConditionExpression: "#owner = :owner",
          ExpressionAttributeNames: { "#owner": "owner" },
          ExpressionAttributeValues: { ":owner": owner },
        }),
      );
    } catch (err) {
      // Expired and taken over (or already gone): the lease is someone else's now.
      if (!isConditionFailure(err)) throw err;
    }
  }

  private lease(workspaceId: string, owner: string, now: number) {
    const expiresAt = now + this.leaseMs;
    return {
      pk: wsKey(workspaceId),
      sk: LEASE_SK,
      owner,
      /** Epoch milliseconds: what the conditions compare. */
      expires_at: expiresAt,
      /** Epoch seconds, an hour after expiry: DynamoDB's time to live sweeps crashed leases. */
      [TTL_ATTRIBUTE]: Math.ceil(expiresAt / 1000) + 3600,
    };
  }
}
