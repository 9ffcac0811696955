import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { documentedRoutes } from "../../functions/docs-api.js";
import { createServiceApp } from "../../lib/http/app.js";
import { openApiDocument } from "../../lib/http/docs.js";
import {
  IDEMPOTENCY_HOLD_SECONDS,
  IDEMPOTENCY_WINDOW_SECONDS,
  IdempotencyKeys,
  idempotentCreates,
} from "../../lib/http/idempotency.js";
import { sourcesRoutes } from "../../lib/knowledge/sources/routes.js";
import type { Sources } from "../../lib/knowledge/sources/sources.js";
import { bearerWorkspace } from "../support/app.js";
import { retrieverOn, roomyQuotas, sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { startTestRuntime } from "../support/runtime.js";

/**
 * Idempotent creates over dynalite: the knowledge API's `POST /api/knowledge` (JSON and
 * multipart) with the Idempotency-Key middleware, each test in a workspace of its own (the
 * bearer token names it).
 */

let aws: TestAws;
let sources: Sources;
let keys: IdempotencyKeys;
let app: ReturnType<typeof createServiceApp>;
let workspaces = 0;
let ws: string;

beforeAll(async () => {
  aws = await startAws();
  sources = sourcesOn(aws);
  keys = new IdempotencyKeys(aws.table);
  app = createServiceApp({
    authenticate: bearerWorkspace,
    idempotency: (modules) => idempotentCreates(keys, modules),
    modules: [
      sourcesRoutes({
        sources,
        blobs: aws.blobs,
        retriever: retrieverOn(aws),
        maxTextBytes: 1000,
        quotas: roomyQuotas(aws.table),
        allowPrivate: false,
      }),
    ],
  });
});
afterAll(() => aws.close());
beforeEach(() => {
  ws = `ws_idem_${++workspaces}`;
});
afterEach(() => {
  vi.useRealTimers();
});

const create = (body: unknown, key?: string, workspace = ws) =>
  app.request("/api/knowledge", {
    method: "POST",
    headers: {
      authorization: `Bearer ${workspace}`,
      "content-type": "application/json",
      ...(key === undefined ? {} : { "idempotency-key": key }),
    },
    body: JSON.stringify(body),
  });

const upload = (content: string, key: string) => {
  // A new FormData each time: a new multipart boundary, as a client retrying would send.
  const form = new FormData();
  form.append("file", new File([content], "notes.md", { type: "text/markdown" }));
  return app.request("/api/knowledge", {
    method: "POST",
    headers: { authorization: `Bearer ${ws}`, "idempotency-key": key },
    body: form,
  });
};

const sourceCount = async (workspace = ws) =>
  (await sources.list(workspace, {}, 100, undefined)).items.length;

describe("Idempotency-Key on a create", () => {
  it("creates once when two identical requests race, and replays the first answer after", async () => {
    const body = { text: "# Pricing\nPro costs $49." };
    const raced = await Promise.all([create(body, "race-1"), create(body, "race-1")]);
    const statuses = raced.map((res) => res.status).sort();
    // The loser either waited for nothing (409, still in progress) or found the answer (200).
    expect([
      [200, 200],
      [200, 409],
    ]).toContainEqual(statuses);
    expect(await sourceCount()).toBe(1);
    const first = raced.find((res) => res.status === 200);
    const firstBody = await first?.json();
    const busy = raced.find((res) => res.status === 409);
    if (busy) {
      expect(((await busy.json()) as { error: { code: string } }).error.code).toBe(
        "idempotency_key_in_use",
      );
      expect(busy.headers.get("retry-after")).toBe("1");
    }

    const retry = await create(body, "race-1");
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await retry.json()).toEqual(firstBody);
    expect(await sourceCount()).toBe(1);
  });

  it("treats a multipart retry with a new boundary as the same request", async () => {
    const first = await upload("# Notes\nA file.", "file-1");
    expect(first.status).toBe(200);
    const retry = await upload("# Notes\nA file.", "file-1");
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await retry.json()).toEqual(await first.json());
    expect(await sourceCount()).toBe(1);
    const other = await upload("# Notes\nAnother file.", "file-1");
    expect(other.status).toBe(422);
  });

  it("refuses the same key with another body, keeping the first answer for the first body", async () => {
    const first = await create({ text: "First" }, "same-key");
    const reused = await create({ text: "Second" }, "same-key");
    expect(reused.status).toBe(422);
    expect(await reused.json()).toEqual({
      error: {
        code: "idempotency_key_reused",
        message: expect.stringContaining("another request"),
      },
    });
    expect(await (await create({ text: "First" }, "same-key")).json()).toEqual(await first.json());
    expect(await sourceCount()).toBe(1);
  });

  it("keeps keys apart per workspace, and creates anew without a key", async () => {
    const other = `${ws}_other`;
    const mine = await (await create({ text: "Mine" }, "shared")).json();
    const theirs = await (await create({ text: "Mine" }, "shared", other)).json();
    expect(theirs).not.toEqual(mine);
    expect(await sourceCount(other)).toBe(1);
    await create({ text: "Mine" });
    await create({ text: "Mine" });
    expect(await sourceCount()).toBe(3);
  });

  it("lets a failed attempt's key go, so a corrected retry can use it", async () => {
    const tooLong = await create({ text: "x".repeat(2000) }, "fix-me");
    expect(tooLong.status).toBe(413);
    const invalid = await create({ nothing: true }, "fix-me");
    expect(invalid.status).toBe(400);
    const fixed = await create({ text: "Short" }, "fix-me");
    expect(fixed.status).toBe(200);
    expect(fixed.headers.get("idempotent-replayed")).toBeNull();
    expect(await sourceCount()).toBe(1);
  });

  it("refuses a malformed key like any invalid header", async () => {
    const res = await create({ text: "Short" }, "x".repeat(256));
    expect(res.status).toBe(400);
    expect(await sourceCount()).toBe(0);
  });

  it("forgets an answer after 24 hours, and a holder that stopped answering after its hold", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    await create({ text: "Day one" }, "daily");
    vi.setSystemTime(Date.now() + (IDEMPOTENCY_WINDOW_SECONDS - 5) * 1000);
    expect((await create({ text: "Day one" }, "daily")).headers.get("idempotent-replayed")).toBe(
      "true",
    );
    vi.setSystemTime(Date.now() + 10_000);
    expect((await create({ text: "Day one" }, "daily")).headers.get("idempotent-replayed")).toBe(
      null,
    );
    expect(await sourceCount()).toBe(2);

    // A request that claimed its key and died: its retry waits out the hold, then goes ahead.
    expect((await keys.claim(ws, "crashed", "a body")).kind).toBe("claimed");
    expect((await keys.claim(ws, "crashed", "a body")).kind).toBe("running");
    expect((await keys.claim(ws, "crashed", "another body")).kind).toBe("reused");
    vi.setSystemTime(Date.now() + IDEMPOTENCY_HOLD_SECONDS * 1000);
    expect((await keys.claim(ws, "crashed", "another body")).kind).toBe("reused");
    expect((await keys.claim(ws, "crashed", "a body")).kind).toBe("claimed");
  });
});

describe("the create routes", () => {
  it("declare Idempotency-Key and its answers in the reference", () => {
    const document = openApiDocument(documentedRoutes) as unknown as {
      paths: Record<
        string,
        Record<string, { parameters?: Array<{ name: string; in: string }>; responses: object }>
      >;
    };
    const withKey = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, op]) =>
          op.parameters?.some((p) => p.in === "header" && /^idempotency-key$/i.test(p.name)),
        )
        .map(([method, op]) => {
          expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["409", "422"]));
          return `${method.toUpperCase()} ${path}`;
        }),
    );
    expect(withKey.sort()).toEqual([
      "POST /api/artifacts",
      "POST /api/export",
      "POST /api/intel/competitors",
      "POST /api/knowledge",
      "POST /api/knowledge/crawl",
      "POST /api/knowledge/uploads",
      "POST /api/webhooks",
    ]);
  });
});

describe("the service's API functions", () => {
  it("take the key on their create routes", async () => {
    const rt = await startTestRuntime();
    try {
      const track = () =>
        rt.call("/api/intel/competitors", {
          method: "POST",
          json: { domain: "acme.example" },
          headers: { "idempotency-key": "track-acme" },
        });
      const first = await track();
      expect(first.status).toBe(201);
      // Without the key, tracking the domain again would be a 409.
      const retry = await track();
      expect(retry.status).toBe(201);
      expect(retry.headers.get("idempotent-replayed")).toBe("true");
      expect(await retry.json()).toEqual(await first.json());
    } finally {
      await rt.close();
    }
  }, 60_000);
});
