import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Stores } from "../../lib/store/clients.js";
import { seedOneOfEach } from "./fixtures.js";
import { fuzzSeed, hostileBody, hostileId, hostileQuery, requestOf } from "./hostile.js";
import { type Answer, describeRequest, expectWellFormed, send } from "./probe.js";
import { type Hardened, startHardened } from "./runtime.js";
import { changes, runtimeStores, type StoreSnapshot, snapshot } from "./store.js";
import { type ApiRoute, fillPath, surface } from "./surface.js";

/**
 * Property-based fuzzing of every route the manifest serves: hostile paths, queries and bodies,
 * sent with a valid key so they reach validation and the handlers. Whatever is sent, the answer
 * is below 500, a well-formed error body when it is an error, free of implementation details,
 * and a rejected request changes nothing in the table or the bucket.
 *
 * Runs are bounded and seeded: a fresh seed each run, printed (FUZZ_SEED replays a run, FUZZ_RUNS
 * sets the runs per route; each route runs from the seed plus its index in the manifest). A
 * failure prints `{ seed, path }`, the shrunk counterexample and the request as sent; replay it with
 * `FUZZ_REPLAY=<seed>:<path> npx vitest run test/hardening/fuzz.test.ts -t '<METHOD /path>'`.
 * FUZZ_STATS=1 prints each route's mix of answers, to see how deep the inputs reach.
 */

const SEED = fuzzSeed("fuzz");
const RUNS = Number(process.env.FUZZ_RUNS ?? 30);
const [REPLAY_SEED, ...REPLAY_PATH] = (process.env.FUZZ_REPLAY ?? "").split(":");
const replay = REPLAY_SEED ? { seed: Number(REPLAY_SEED), path: REPLAY_PATH.join(":") } : undefined;

let h: Hardened;
let stores: Stores;
/** Real ids of the workspace's own resources, by prefix, for bodies that must get past lookup. */
const real: Record<string, string[]> = {};
let prototypeBefore: string[];

beforeAll(async () => {
  prototypeBefore = Object.getOwnPropertyNames(Object.prototype);
  h = await startHardened();
  stores = runtimeStores();
  Object.assign(real, await seedOneOfEach(h.rt, stores.table, h.rt.runtime.workspaceId, h.rt.key));
});
afterAll(() => h.close());

const methods = (route: ApiRoute) =>
  fc.oneof(
    { arbitrary: fc.constant(route.method), weight: 9 },
    { arbitrary: fc.constantFrom("OPTIONS", "PUT", "PATCH", "POST"), weight: 1 },
  );

describe("fuzzing every route of the manifest", () => {
  it.each(surface.map((route, i) => [route.label, route, i] as const))(
    "%s answers hostile input with a clean 4xx and writes nothing when it refuses",
    async (_label, route, index) => {
      const ids = fc.record(
        Object.fromEntries(
          route.params.map((p) => [
            p.name,
            // A real id lets a hostile body reach the handler; DELETE never gets one, so the
            // fixtures survive for the other routes.
            hostileId(
              route.method === "DELETE" ? [] : (real[p.idPrefix ?? ""] ?? []),
              (p.schema.enum ?? []).map(String),
            ),
          ]),
        ),
      );
      let current: StoreSnapshot = await snapshot(stores);
      let accepted = 0;
      const statuses: Record<number, number> = {};
      const property = fc.asyncProperty(
        methods(route),
        ids,
        hostileQuery(route),
        hostileBody(route),
        async (method, pathIds, query, body) => {
          const request = await requestOf(route, method, pathIds, query, body, h.rt.key);
          const label = `${route.label} <- ${describeRequest(request)}`;
          const answer: Answer = await send(h.rt.url, request);
          statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
          expectWellFormed(label, answer);
          await h.rt.runtime.queues.idle();
          const after = await snapshot(stores);
          if (answer.status >= 400 || method === "GET") {
            expect(changes(current, after), `${label} -> ${answer.status} wrote`).toEqual([]);
          } else {
            accepted++;
          }
          current = after;
        },
      );
      await fc.assert(property, replay ?? { seed: SEED + index, numRuns: RUNS });
      if (process.env.FUZZ_STATS) console.info(route.label, JSON.stringify(statuses));
      // Most hostile requests must be refused; a route accepting nearly all is not validating.
      if (route.body && !replay && RUNS >= 10) {
        expect(accepted, `${route.label} accepted`).toBeLessThan(RUNS);
      }
    },
  );

  it("never answers 405 naming the very method it refused, even for a trailing slash", async () => {
    for (const route of surface) {
      const path = fillPath(
        route,
        Object.fromEntries(
          route.params.map((p) => [
            p.name,
            real[p.idPrefix ?? ""]?.[0] ?? String(p.schema.enum?.[0] ?? "x"),
          ]),
        ),
      );
      for (const variant of [`${path}/`, path.replace(/^\/(api\/)?/, "/$1/")]) {
        const answer = await send(h.rt.url, { method: route.method, path: variant, key: h.rt.key });
        expectWellFormed(`${route.method} ${variant}`, answer);
        if (answer.status === 405) {
          expect(
            (answer.headers.get("allow") ?? "").split(", "),
            `${route.method} ${variant}: ${answer.text}`,
          ).not.toContain(route.method);
        }
      }
    }
  });

  it("leaves Object.prototype untouched after every polluting key the fuzzing sent", () => {
    expect(Object.getOwnPropertyNames(Object.prototype)).toEqual(prototypeBefore);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("dead-letters nothing: every message an accepted request queued was handled", () => {
    for (const queue of ["index", "crawl", "uploads", "checks"]) {
      expect(h.rt.runtime.queues.deadLetters(queue), queue).toEqual([]);
    }
  });
});
