import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { createServiceApp } from "../../lib/http/app.js";
import { citationsFor } from "../../lib/intel/citations.js";
import { chunkText } from "../../lib/knowledge/indexing/chunking.js";
import { fileLoader } from "../../lib/knowledge/indexing/file-loader.js";
import { Indexer, textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { Passages } from "../../lib/knowledge/indexing/passages.js";
import { urlLoader } from "../../lib/knowledge/indexing/url-loader.js";
import { passageUrl } from "../../lib/knowledge/retrieval/citation-spans.js";
import type { IndexRetriever, SearchResult } from "../../lib/knowledge/retrieval/retrieval.js";
import type { Sources } from "../../lib/knowledge/sources/sources.js";
import { createFileSource } from "../../lib/knowledge/uploads/multipart.js";
import type { Delivery, IndexMessage } from "../../lib/store/queue.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { docxBytes, pdfBytes } from "../files/support/documents.js";
import { sourcesApp } from "../support/app.js";
import { retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { htmlPage, respond, type Site, startSite } from "../support/sites.js";

/**
 * Exact citations: every search result's `char_start`/`char_end` slice the source's stored text
 * to exactly the result's `text`, for text, PDF, DOCX and web sources, and the text route answers
 * that slice; a chat citation's span is its quoted sentence; a web result's URL carries a text
 * fragment. Chunking set per source is stored and used by every reindex.
 */

const WS = "ws_01JD0000000000000000000301";
const once: Delivery = { receiveCount: 1, maxReceiveCount: 3 };
let aws: TestAws;
let site: Site;
let sources: Sources;
let indexer: Indexer;
let retriever: IndexRetriever;
let app: ReturnType<typeof createServiceApp>;

beforeAll(async () => {
  [aws, site] = await Promise.all([startAws(), startSite()]);
  sources = sourcesOn(aws);
  indexer = new Indexer({
    table: aws.table,
    blobs: aws.blobs,
    search: aws.search,
    chunking: { size: 300, overlap: 60 },
    loaders: {
      text: textLoader(aws.blobs),
      file: fileLoader(aws.blobs),
      url: urlLoader({ fetcher: new SafeFetcher({ allowPrivate: true }), blobs: aws.blobs }),
    },
  });
  retriever = retrieverOn(aws);
  app = sourcesApp(aws, sources, retriever, { allowPrivate: true });
});
afterAll(() => Promise.all([aws.close(), site.close()]));

/** Runs the index message the service queued last. */
async function indexLast(): Promise<void> {
  const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
  expect(await indexer.handle(message, once)).toBe("indexed");
}

const request = (path: string, init: RequestInit = {}) =>
  app.request(path, {
    ...init,
    headers: { authorization: `Bearer ${WS}`, "content-type": "application/json" },
  });

/** The span of a result read through `GET /api/knowledge/{id}/text`. */
async function spanText(result: SearchResult): Promise<string> {
  const res = await request(
    `/api/knowledge/${result.source_id}/text?start=${result.char_start}&end=${result.char_end}`,
  );
  expect(res.status).toBe(200);
  return ((await res.json()) as { text: string }).text;
}

/** Every result of the query from one source, each checked to slice the stored text to itself. */
async function expectExactSpans(sourceId: string, query: string): Promise<SearchResult[]> {
  const results = await retriever.search(WS, query, 10, { source_ids: [sourceId] });
  expect(results.length).toBeGreaterThan(0);
  const { chunks_key } = await sources.get(WS, sourceId);
  const stored = (await new Passages(aws.blobs).text(chunks_key as string)) as string;
  for (const result of results) {
    expect(result.char_start).not.toBeNull();
    expect(stored.slice(result.char_start ?? 0, result.char_end ?? 0)).toBe(result.text);
    expect(await spanText(result)).toBe(result.text);
  }
  return results;
}

const long = (topic: string, sentences: number) =>
  Array.from(
    { length: sentences },
    (_, i) => `Sentence ${i} of ${topic} explains\nhow the  team works on ${topic}.`,
  ).join(" ");

describe("spans of search results", () => {
  it("slice a text source's stored text to each passage, overlap, headings and odd spacing included", async () => {
    const text = [
      "# Handbook\n\nIntro line.",
      `## Pricing\n\n${long("pricing", 12)}`,
      `## Travel\n\n${long("travel", 3)}\n\n\n\nLast paragraph   about travel.`,
    ].join("\n\n");
    const item = await sources.createText(WS, text, "Handbook");
    await indexLast();
    const results = await expectExactSpans(item.id, "pricing travel team");
    const pricing = results.find((r) => r.heading === "Handbook > Pricing");
    expect(pricing?.heading_path).toEqual(["Handbook", "Pricing"]);
    expect(pricing?.url).toBeNull();
  });

  it("slice a PDF's text and keep the page of each passage", async () => {
    const file = new File(
      [
        new Uint8Array(
          await pdfBytes([
            { heading: "Plans", lines: ["The Starter plan costs 19 dollars a month."] },
            { heading: "Support", lines: ["Support answers within four hours on weekdays."] },
          ]),
        ),
      ],
      "plans.pdf",
      { type: "application/pdf" },
    );
    const { source } = await createFileSource({ sources, blobs: aws.blobs }, WS, file);
    await indexLast();
    const results = await expectExactSpans(source.id, "support answers hours starter plan");
    expect(new Set(results.map((r) => r.page))).toEqual(new Set([1, 2]));
  });

  it("slice a DOCX's text under its headings", async () => {
    const file = new File([new Uint8Array(await docxBytes())], "handbook.docx", {
      type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    });
    const { source } = await createFileSource({ sources, blobs: aws.blobs }, WS, file);
    await indexLast();
    const results = await expectExactSpans(source.id, "onboarding leadership Lovelace");
    expect(results.some((r) => r.heading_path.includes("Leadership"))).toBe(true);
  });

  it("slice a web page's text and open the page at the passage", async () => {
    site.route(
      "/guide",
      respond(
        htmlPage(
          "Guide",
          `<article><h1>Guide</h1><p>Our <a href="/p">refund policy</a> gives money back within thirty days of purchase.</p><p>${long("refunds", 6)}</p></article>`,
        ),
      ),
    );
    const url = `${site.origin}/guide`;
    const { item } = await sources.addUrl(WS, { url, name: "Guide" });
    await indexLast();
    const [first] = await expectExactSpans(item.id, "refund policy money");
    expect(first?.url?.startsWith(`${url}#:~:text=`)).toBe(true);
    expect(first?.url).toBe(passageUrl(url, first?.text ?? ""));
  });
});

describe("spans of chat citations", () => {
  it("name the quoted sentence within the stored text", async () => {
    const item = await sources.createText(
      WS,
      "Widgets ship from Lisbon. The Team plan costs 99 euros a month. Refunds take a week.",
      "Plans",
    );
    await indexLast();
    const [result] = await retriever.search(WS, "team plan euros", 1, { source_ids: [item.id] });
    const [citation] = citationsFor([1], [result as SearchResult], "It costs 99 euros [1].");
    const stored = await new Passages(aws.blobs).text(
      (await sources.get(WS, item.id)).chunks_key as string,
    );
    expect(citation?.quote).toBe("The Team plan costs 99 euros a month.");
    expect(stored?.slice(citation?.char_start ?? 0, citation?.char_end ?? 0)).toBe(citation?.quote);
  });
});

describe("passage URLs", () => {
  it("take the passage's first and last words as a page shows them, escaping the fragment's syntax", () => {
    expect(
      passageUrl(
        "https://example.com/a#top",
        "## Plans\n\nThe **Pro** plan, [billed](https://x.io) yearly - costs less & saves more per seat.",
      ),
    ).toBe("https://example.com/a#:~:text=Plans%20The%20Pro%20plan%2C,saves%20more%20per%20seat.");
    expect(passageUrl("https://example.com/b", "Terms & fees - short")).toBe(
      "https://example.com/b#:~:text=Terms%20%26%20fees%20%2D%20short",
    );
  });
});

describe("the text route", () => {
  it("cuts offsets past the end, refuses a span too wide, and a source without text", async () => {
    const item = await sources.createText(WS, "Short text.", "Short");
    await indexLast();
    const whole = await request(`/api/knowledge/${item.id}/text?start=6&end=500`);
    expect(await whole.json()).toEqual({ text: "text.", start: 6, end: 11, length: 11 });
    const wide = await request(`/api/knowledge/${item.id}/text?start=0&end=300000`);
    expect(wide.status).toBe(400);
    const pending = await sources.createText(WS, "Not indexed yet.", "Pending");
    expect((await request(`/api/knowledge/${pending.id}/text`)).status).toBe(409);
  });
});

describe("chunking per source", () => {
  it("is stored on create and used by every reindex", async () => {
    const text = `# One\n\n${long("alpha", 8)}\n\n# Two\n\n${long("beta", 2)}`;
    const res = await request("/api/knowledge", {
      method: "POST",
      body: JSON.stringify({ text, chunking: { size: 1500, overlap: 0, by_headings: false } }),
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    await indexLast();
    const expected = chunkText(text, { size: 1500, overlap: 0, byHeadings: false }).length;
    const service = chunkText(text, { size: 300, overlap: 60 }).length;
    expect(expected).not.toBe(service);
    const indexed = await sources.get(WS, id);
    expect(indexed.chunking).toEqual({ size: 1500, overlap: 0, by_headings: false });
    expect(indexed.chunk_count).toBe(expected);
    await sources.reindex(WS, id);
    await indexLast();
    expect((await sources.get(WS, id)).chunk_count).toBe(expected);
  });

  it("refuses sizes out of bounds and an overlap of half the size or more, naming the field", async () => {
    for (const [chunking, path] of [
      [{ size: 50 }, "chunking.size"],
      [{ size: 400, overlap: 200 }, "chunking.overlap"],
      [{ by_headings: "no" }, "chunking.by_headings"],
    ] as const) {
      const res = await request("/api/knowledge", {
        method: "POST",
        body: JSON.stringify({ text: "Some text.", chunking }),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as {
        error: { details: { issues: Array<{ path: string }> } };
      };
      expect(body.error.details.issues.map((i) => i.path)).toEqual([path]);
    }
  });
});
