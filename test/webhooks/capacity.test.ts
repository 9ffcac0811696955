import { describe, expect, it } from "vitest";
import { queueWorkers } from "../../functions/manifest.js";
import {
  WEBHOOK_ASSUMPTIONS,
  WEBHOOK_CAPACITY,
  type WebhookAssumptions,
  webhookCapacity,
} from "../../lib/webhooks/capacity.js";
import { coolOffMs } from "../../lib/webhooks/circuit.js";

const model = (change: Partial<WebhookAssumptions>) =>
  webhookCapacity({ ...WEBHOOK_ASSUMPTIONS, ...change });
const worker = queueWorkers.find((w) => w.name === "webhooks-worker");

describe("the webhooks worker's capacity model", () => {
  it("is what the manifest runs the worker with", () => {
    expect(worker).toMatchObject({
      batchSize: WEBHOOK_CAPACITY.batchSize,
      maxConcurrency: WEBHOOK_CAPACITY.maxConcurrency,
    });
    // A first attempt's whole lease (its timeout and margin) fits in the invocation.
    expect(worker?.timeoutSeconds).toBeGreaterThanOrEqual(WEBHOOK_CAPACITY.minWorkerTimeoutSeconds);
    expect(WEBHOOK_CAPACITY.leaseMs).toBeGreaterThan(WEBHOOK_CAPACITY.attemptTimeoutMs);
  });

  it("carries the tenants' deliveries, and throws when it no longer could", () => {
    expect(WEBHOOK_CAPACITY.deliveriesPerHour).toBeGreaterThanOrEqual(
      WEBHOOK_CAPACITY.neededPerHour,
    );
    expect(() => model({ tenants: 10_000 })).toThrow(/deliveries an hour/);
    expect(model({ maxConcurrency: 50 }).slots).toBe(500);
  });

  it("leaves every workspace a share, and the others at least one invocation", () => {
    expect(WEBHOOK_CAPACITY.perWorkspace).toBeGreaterThanOrEqual(1);
    expect(WEBHOOK_CAPACITY.perWorkspace).toBeLessThan(WEBHOOK_CAPACITY.maxConcurrency);
    expect(model({ maxConcurrency: 2, tenants: 100 }).perWorkspace).toBe(1);
  });

  it("doubles an open circuit's cool-off each time it opens again, up to the most", () => {
    const { breaker } = WEBHOOK_CAPACITY;
    expect([1, 2, 3].map((n) => coolOffMs(n, breaker))).toEqual([
      breaker.coolOffMs,
      2 * breaker.coolOffMs,
      4 * breaker.coolOffMs,
    ]);
    expect(coolOffMs(40, breaker)).toBe(breaker.maxCoolOffMs);
  });
});
