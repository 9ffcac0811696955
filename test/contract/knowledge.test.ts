import type { ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shared } from "../support/shared.js";
import { htmlPage, prose, type Site, startSite } from "../support/sites.js";
import {
  type Client,
  HANG_GUARD_MS,
  isIsoUtc,
  issuesOf,
  misfits,
  type OpenApi,
  type Service,
  SLOW_TEST_MS,
  startService,
  until,
} from "./support.js";

/**
 * The Knowledge Base as the interface document describes it (INTERFACE.md, "Knowledge source",
 * POST/GET/PATCH/DELETE /api/knowledge, reindex), asserted over HTTP only. Where the document
 * says "not shown", the answer must be the one /openapi.json documents.
 */

interface Source {
  id: string;
  type: string;
  source_url_or_path: string;
  status: string;
  chunk_count: number;
  enabled: number;
  created_at: string;
  indexed_at: string;
  last_error: string | null;
}

let service: Service;
let api: Client;
let openapi: OpenApi;
let site: Site;

/** A page whose answers the test can hold, so that the service's fetch of it cannot finish. */
let held: Promise<void> = Promise.resolve();
let release = () => {};
function holdThePage() {
  held = new Promise((resolve) => {
    release = resolve;
  });
}
function releaseThePage() {
  release();
  held = Promise.resolve();
}
let edition = "first";
const pageRequests = () => site.requests.filter((path) => path === "/held").length;

const url = (path: string) => `${site.origin}${path}`;

beforeAll(async () => {
  site = await startSite({
    "/pricing": (_req, res: ServerResponse) => {
      res
        .writeHead(200, { "content-type": "text/html; charset=utf-8" })
        .end(
          htmlPage(
            "Pricing",
            `<article><h1>Pricing</h1>${prose("Pricing")}<p>The Team plan of Quokkalytics costs $99 per month.</p></article>`,
          ),
        );
    },
    "/held": async (_req, res: ServerResponse) => {
      await held;
      res
        .writeHead(200, { "content-type": "text/html; charset=utf-8" })
        .end(
          htmlPage(
            "Changelog",
            `<article><h1>Changelog</h1>${prose("Changelog")}<p>This is the ${edition} edition of the wombatronic changelog.</p></article>`,
          ),
        );
    },
  });
  service = await startService();
  api = service.client;
  openapi = service.openapi;
});
afterAll(async () => {
  releaseThePage();
  await service?.close();
  await site?.close();
});

const listed = async () => (await api.get<{ sources: Source[] }>("/api/knowledge")).body.sources;

/** The listed record of a source (the document's way to read one). */
async function record(id: string): Promise<Source | undefined> {
  return (await listed()).find((source) => source.id === id);
}

const settled = (id: string) =>
  until(
    `source ${id} to leave indexing`,
    () => record(id),
    (source) => source !== undefined && source.status !== "indexing",
  );

async function search(query: string): Promise<string[]> {
  const found = await api.post<{ results: Array<{ source_id: string }> }>("/api/knowledge/search", {
    query,
  });
  expect(found.status).toBe(200);
  return found.body.results.map((result) => result.source_id);
}

/**
 * The sources the tests work on, each added by the first test that needs it (the answer to its
 * POST): a test asks for its sources rather than reading what another left.
 */
const added = {
  url: shared(() => api.post("/api/knowledge", { url: url("/pricing") })),
  text: shared(() =>
    api.post("/api/knowledge", {
      text: "# Field notes\nOur customers call the dashboard the platypodium.",
      name: "Field notes",
    }),
  ),
  file: shared(() => {
    const form = new FormData();
    form.set(
      "file",
      new Blob(["# Battlecard\nWhy we win against the echidnasoft suite."], {
        type: "text/markdown",
      }),
      "battlecard.md",
    );
    return api.send("POST", "/api/knowledge", { form });
  }),
};
const idOf = async (source: keyof typeof added) => String((await added[source]()).body.id);

/** The held page, added by URL and indexed: its id. */
const heldSource = shared(async () => {
  const first = await api.post("/api/knowledge", { url: url("/held") });
  const id = String(first.body.id);
  await settled(id);
  return id;
});

describe("POST /api/knowledge", () => {
  it("adds a new web page by url: 200 with a kb_ id and status indexing", async () => {
    const page = await added.url();
    expect.soft(page.body.id).toMatch(/^kb_/);
    expect.soft(page.body.status).toBe("indexing");
    expect.soft(page.status, JSON.stringify(page.body)).toBe(200);
  });

  it("adds raw text: 200 with a kb_ id and status indexing", async () => {
    const text = await added.text();
    expect(text.status).toBe(200);
    expect(text.body).toMatchObject({ id: expect.stringMatching(/^kb_/), status: "indexing" });
  });

  it("uploads a file as multipart/form-data with the answer /openapi.json documents", async () => {
    const file = await added.file();
    // The document: "file accepted" moves a new source to `indexing`, the answer has id and status.
    expect(file.body).toMatchObject({ id: expect.stringMatching(/^kb_/), status: "indexing" });
    // "Response for file upload: not shown": it must be a success /openapi.json documents.
    expect(file.status).toBeGreaterThanOrEqual(200);
    expect(file.status).toBeLessThan(300);
    expect(openapi.statuses("POST", "/api/knowledge")).toContain(file.status);
    expect(
      misfits(openapi.responseSchema("POST", "/api/knowledge", file.status), file.body),
    ).toEqual([]);
  });

  it(
    "indexes every source it accepted, and lists each with the documented fields and types",
    async () => {
      const ids = { url: await idOf("url"), text: await idOf("text"), file: await idOf("file") };
      for (const id of Object.values(ids)) await settled(id);
      const sources = await listed();
      for (const id of Object.values(ids)) {
        const source = sources.find((s) => s.id === id);
        expect(source, `source ${id} is listed`).toBeDefined();
        if (!source) continue;
        expect(source.id).toMatch(/^kb_/);
        expect(typeof source.type).toBe("string");
        expect(source.status).toBe("indexed");
        expect(Number.isInteger(source.chunk_count), `chunk_count ${source.chunk_count}`).toBe(
          true,
        );
        expect(source.chunk_count).toBeGreaterThan(0);
        expect(source.enabled).toBe(1);
        expect(isIsoUtc(source.created_at), `created_at ${source.created_at}`).toBe(true);
        expect(isIsoUtc(source.indexed_at), `indexed_at ${source.indexed_at}`).toBe(true);
        expect(source.last_error).toBeNull();
      }
      // Fields beyond the document's are the service's own: /openapi.json must describe them.
      const whole = await api.get("/api/knowledge");
      expect(misfits(openapi.responseSchema("GET", "/api/knowledge", 200), whole.body)).toEqual([]);
      const page = sources.find((s) => s.id === ids.url);
      expect(page).toMatchObject({ type: "url", source_url_or_path: url("/pricing") });
      expect(sources.find((s) => s.id === ids.file)?.source_url_or_path).toBe("battlecard.md");
    },
    SLOW_TEST_MS,
  );

  it("gives every listed source a string source_url_or_path, as the field table types it", async () => {
    const sources = await listed();
    const notStrings = sources
      .filter((s) => typeof s.source_url_or_path !== "string")
      .map((s) => ({ id: s.id, type: s.type, source_url_or_path: s.source_url_or_path }));
    expect(notStrings).toEqual([]);
  });

  it(
    "answers 200 indexing for a URL added again, and lists it as indexing until its refresh settles",
    async () => {
      const heldUrl = await heldSource();
      expect((await record(heldUrl))?.status).toBe("indexed");

      holdThePage();
      const asked = pageRequests();
      const again = await api.post("/api/knowledge", { url: url("/held") });
      // The service is fetching the page again, and cannot finish while the page is held.
      const fetching = await until(
        "the service to fetch the page again",
        async () => pageRequests(),
        (n) => n > asked,
        HANG_GUARD_MS / 3,
      ).catch(() => asked);
      const during = await record(String(again.body.id));
      releaseThePage();

      expect.soft(again.body.id).toMatch(/^kb_/);
      expect.soft(again.status, JSON.stringify(again.body)).toBe(200);
      expect.soft(again.body.status, "the answer's status").toBe("indexing");
      expect.soft(fetching, "the page is fetched again to refresh it").toBeGreaterThan(asked);
      expect.soft(during?.status, "listed while its refresh is held").toBe("indexing");
      const after = await settled(String(again.body.id));
      expect(after?.status).toBe("indexed");
    },
    SLOW_TEST_MS,
  );

  it("refuses a body with both url and text as /openapi.json documents (400 naming the fields)", async () => {
    const both = await api.post("/api/knowledge", { url: url("/pricing"), text: "both" });
    expect(openapi.statuses("POST", "/api/knowledge")).toContain(both.status);
    expect(both.status).toBe(400);
    expect(misfits(openapi.responseSchema("POST", "/api/knowledge", 400), both.body)).toEqual([]);
    expect(JSON.stringify(issuesOf(both.body))).toMatch(/url/);
    expect(JSON.stringify(issuesOf(both.body))).toMatch(/text/);
  });

  it("refuses a body with neither url nor text as /openapi.json documents (400 naming the fields)", async () => {
    const neither = await api.post("/api/knowledge", { name: "nothing to index" });
    expect(openapi.statuses("POST", "/api/knowledge")).toContain(neither.status);
    expect(neither.status).toBe(400);
    expect(misfits(openapi.responseSchema("POST", "/api/knowledge", 400), neither.body)).toEqual(
      [],
    );
    expect(JSON.stringify(issuesOf(neither.body))).toMatch(/url/);
    expect(JSON.stringify(issuesOf(neither.body))).toMatch(/text/);
  });

  it("refuses a file over the upload size limit /openapi.json documents, with its documented status", async () => {
    const upload = openapi.schema("UploadKnowledgeFile") as {
      properties: { file: { description: string } };
    };
    const documented = /up to [\d.]+ MiB, ([\d,]+) bytes/.exec(upload.properties.file.description);
    expect(documented, "the multipart file's size limit is documented in bytes").not.toBeNull();
    const tooLarge = Number(documented?.[1]?.replaceAll(",", "")) + 1;
    const tooLargeStatus = Number(
      /Too large is a (\d{3})/.exec(
        openapi.operation("POST", "/api/knowledge").description ?? "",
      )?.[1],
    );
    expect(openapi.statuses("POST", "/api/knowledge")).toContain(tooLargeStatus);

    const form = new FormData();
    form.set(
      "file",
      new Blob([new Uint8Array(tooLarge).fill(97)], { type: "text/plain" }),
      "big.txt",
    );
    const refused = await api.send("POST", "/api/knowledge", { form });
    expect(refused.status).toBe(tooLargeStatus);
    expect(
      misfits(openapi.responseSchema("POST", "/api/knowledge", tooLargeStatus), refused.body),
    ).toEqual([]);
  });
});

describe("PATCH /api/knowledge/{id}", () => {
  it("takes a disabled source out of grounding and lists it as enabled 0; enabling brings it back", async () => {
    const ids = { text: await idOf("text") };
    await settled(ids.text);
    expect(await search("platypodium")).toContain(ids.text);

    const disabled = await api.patch(`/api/knowledge/${ids.text}`, { enabled: false });
    expect(openapi.statuses("PATCH", "/api/knowledge/{id}")).toContain(disabled.status);
    expect(disabled.status).toBeLessThan(300);
    expect((await record(ids.text))?.enabled).toBe(0);
    expect(await search("platypodium")).not.toContain(ids.text);
    // Disabled, not deleted.
    expect((await record(ids.text))?.status).toBe("indexed");

    const enabled = await api.patch(`/api/knowledge/${ids.text}`, { enabled: true });
    expect(enabled.status).toBeLessThan(300);
    expect((await record(ids.text))?.enabled).toBe(1);
    expect(await search("platypodium")).toContain(ids.text);
  });
});

describe("POST /api/knowledge/{id}/reindex", () => {
  it(
    "re-runs indexing: the source reads indexing, then indexed with the page's changes",
    async () => {
      const ids = { heldUrl: await heldSource() };
      const before = await record(ids.heldUrl);
      expect(before?.status).toBe("indexed");
      edition = "second";
      holdThePage();
      const asked = pageRequests();
      const reindexed = await api.post(`/api/knowledge/${ids.heldUrl}/reindex`);
      expect(openapi.statuses("POST", "/api/knowledge/{id}/reindex")).toContain(reindexed.status);
      expect(reindexed.status).toBeLessThan(300);
      await until(
        "the service to fetch the page to reindex it",
        async () => pageRequests(),
        (n) => n > asked,
      );
      const during = await record(ids.heldUrl);
      releaseThePage();
      expect(during?.status).toBe("indexing");

      const after = await settled(ids.heldUrl);
      expect(after?.status).toBe("indexed");
      expect(after?.last_error).toBeNull();
      expect(isIsoUtc(after?.indexed_at)).toBe(true);
      expect(Date.parse(String(after?.indexed_at))).toBeGreaterThanOrEqual(
        Date.parse(String(before?.indexed_at)),
      );
      // Picks up changes.
      const edition2 = await api.post<{ results: Array<{ source_id: string; text: string }> }>(
        "/api/knowledge/search",
        { query: "wombatronic changelog edition" },
      );
      const texts = edition2.body.results
        .filter((r) => r.source_id === ids.heldUrl)
        .map((r) => r.text)
        .join(" ");
      expect(texts).toContain("second edition");
    },
    SLOW_TEST_MS,
  );
});

describe("DELETE /api/knowledge/{id}", () => {
  it("deletes the source: it leaves the listing and its GET answers 404", async () => {
    const ids = { file: await idOf("file") };
    await settled(ids.file);
    const deleted = await api.delete(`/api/knowledge/${ids.file}`);
    expect(openapi.statuses("DELETE", "/api/knowledge/{id}")).toContain(deleted.status);
    expect(deleted.status).toBeLessThan(300);
    expect(await record(ids.file)).toBeUndefined();
    const gone = await api.get(`/api/knowledge/${ids.file}`);
    expect(gone.status).toBe(404);
    expect(misfits(openapi.responseSchema("GET", "/api/knowledge/{id}", 404), gone.body)).toEqual(
      [],
    );
    expect(await search("echidnasoft")).not.toContain(ids.file);
  });
});
