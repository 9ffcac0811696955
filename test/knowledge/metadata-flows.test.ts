import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PendingUpload } from "../../lib/knowledge/uploads/uploads.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

/**
 * Metadata set where a source is not created by the request itself, through the whole local
 * runtime: a crawl's metadata reaches each of its pages (created later by the crawl worker), and
 * a presigned upload's reaches the source indexed once its file arrives in S3. Either way the
 * attributes show in the source record and a search filtered on them finds those sources only,
 * among others that answer the query as well. Bad metadata is a 400 naming the key, as for
 * `POST /api/knowledge`.
 */

interface Source {
  id: string;
  status: string;
  metadata: Record<string, unknown>;
}

let rt: TestRuntime;
let site: Site;
/** A text source that answers the same query, with other attributes: the filter must leave it. */
let other: string;

/** Waits until the runtime's queues have nothing to deliver now (a crawl's watch may wait). */
const settle = () => rt.runtime.queues.settled();

async function search(filters?: unknown): Promise<string[]> {
  const res = await rt.call("/api/knowledge/search", {
    method: "POST",
    json: { query: "pricing plans", limit: 20, ...(filters ? { filters } : {}) },
  });
  expect(res.status).toBe(200);
  const { results } = (await res.json()) as { results: Array<{ source_id: string }> };
  return [...new Set(results.map((r) => r.source_id))];
}

/** A 400 whose first issue names `path` (the project's error body). */
async function refused(res: Response, path: string, message: RegExp) {
  expect(res.status).toBe(400);
  const body = (await res.json()) as {
    error: { details: { issues: Array<{ path: string; message: string }> } };
  };
  expect(body.error.details.issues[0]?.path).toBe(path);
  expect(body.error.details.issues[0]?.message).toMatch(message);
}

beforeAll(async () => {
  // The fixture site is on loopback, reachable only with this development switch; no pacing.
  process.env.ALLOW_PRIVATE_URLS = "true";
  process.env.CRAWL_POLITENESS_MS = "0";
  rt = await startTestRuntime();
  const page = (title: string) =>
    respond(
      htmlPage(
        title,
        `<article><h1>${title}</h1><p>Our pricing plans: the ${title} plan.</p>${prose(title)}</article><a href="/team">team</a><a href="/enterprise">enterprise</a>`,
      ),
    );
  site = await startSite({
    "/": page("Starter"),
    "/team": page("Team"),
    "/enterprise": page("Enterprise"),
  });
  const res = await rt.call("/api/knowledge", {
    method: "POST",
    json: {
      text: "Pricing plans of a competitor, pricing plans again.",
      metadata: { team: "ops" },
    },
  });
  expect(res.status).toBe(200);
  other = ((await res.json()) as { id: string }).id;
  await settle();
});
afterAll(async () => {
  await rt?.close();
  await site?.close();
});

describe("a crawl's metadata", () => {
  it("goes to each of its pages, which a filter on it finds and nothing else", async () => {
    const metadata = { team: "web", tags: ["docs", "pricing"], year: 2026 };
    const res = await rt.call("/api/knowledge/crawl", {
      method: "POST",
      json: { seedUrl: `${site.origin}/`, maxPages: 5, metadata },
    });
    expect(res.status).toBe(200);
    const { crawlId } = (await res.json()) as { crawlId: string };
    await settle();
    const crawl = await (await rt.call(`/api/knowledge/crawl/${crawlId}`)).json();
    expect(crawl).toMatchObject({ pagesIndexed: 3, metadata });

    const listed = await rt.call(`/api/knowledge?crawl_id=${crawlId}`);
    const { sources } = (await listed.json()) as { sources: Source[] };
    expect(sources).toHaveLength(3);
    for (const source of sources) {
      expect(source.status).toBe("indexed");
      expect(source.metadata).toEqual(metadata);
    }
    const pages = new Set(sources.map((s) => s.id));

    // Unfiltered, the text source answers too; filtered, only the crawl's pages do.
    expect(await search()).toContain(other);
    expect(new Set(await search({ type: "eq", key: "team", value: "web" }))).toEqual(pages);
    expect(new Set(await search({ type: "eq", key: "tags", value: "docs" }))).toEqual(pages);
    expect(
      new Set(
        await search({
          type: "and",
          filters: [
            { type: "gte", key: "year", value: 2026 },
            { type: "ne", key: "team", value: "ops" },
          ],
        }),
      ),
    ).toEqual(pages);
  });

  it("is refused with a 400 naming the bad key, starting no crawl", async () => {
    const res = await rt.call("/api/knowledge/crawl", {
      method: "POST",
      json: { seedUrl: `${site.origin}/`, metadata: { "bad key": 1 } },
    });
    await refused(res, "metadata.bad key", /Key `bad key`: a letter/);
    const { crawls } = (await (await rt.call("/api/knowledge/crawl")).json()) as {
      crawls: unknown[];
    };
    expect(crawls).toHaveLength(1);
  });
});

describe("a presigned upload's metadata", () => {
  const FILE = "Pricing plans for partners: resellers get the Partner plan at cost.";

  async function startUpload(metadata: unknown): Promise<Response> {
    return rt.call("/api/knowledge/uploads", {
      method: "POST",
      json: { filename: "partners.txt", contentType: "text/plain", bytes: FILE.length, metadata },
    });
  }

  it("is on the source indexed once the file arrives, which a filter on it finds", async () => {
    const metadata = { team: "partners", year: 2025, public: false };
    const res = await startUpload(metadata);
    expect(res.status).toBe(200);
    const upload = (await res.json()) as PendingUpload;

    // What a browser does with the form: its fields in order, then the file, straight to S3.
    const form = new FormData();
    for (const [name, value] of Object.entries(upload.fields)) form.append(name, value);
    form.append("file", new Blob([FILE]), "partners.txt");
    const posted = await fetch(upload.uploadUrl, { method: "POST", body: form });
    await posted.text();
    expect(posted.status).toBe(204);
    await settle();

    const source = (await (await rt.call(`/api/knowledge/${upload.id}`)).json()) as Source;
    expect(source).toMatchObject({ status: "indexed", metadata });
    expect(await search()).toContain(other);
    expect(await search({ type: "eq", key: "team", value: "partners" })).toEqual([upload.id]);
    expect(
      await search({
        type: "and",
        filters: [
          { type: "eq", key: "public", value: false },
          { type: "lt", key: "year", value: 2026 },
        ],
      }),
    ).toEqual([upload.id]);
  });

  it("is refused with a 400 naming what is wrong, recording no source", async () => {
    const before = (await (await rt.call("/api/knowledge")).json()) as { sources: unknown[] };
    await refused(await startUpload({ source_id: "x" }), "metadata.source_id", /built-in field/);
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i]));
    await refused(await startUpload(seventeen), "metadata", /At most 16 keys; 17 given/);
    const after = (await (await rt.call("/api/knowledge")).json()) as { sources: unknown[] };
    expect(after.sources).toHaveLength(before.sources.length);
  });
});
