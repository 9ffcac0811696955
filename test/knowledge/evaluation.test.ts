import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { createServiceApp } from "../../lib/http/app.js";
import { textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { scoreRanking } from "../../lib/knowledge/retrieval/evaluation.js";
import type { Embedder } from "../../lib/llm/embeddings.js";
import type { Delivery, IndexMessage } from "../../lib/store/queue.js";
import { llmFor } from "../llm/helpers.js";
import { sourcesApp } from "../support/app.js";
import { indexerOn, retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { FakeOpenAI } from "../support/fake-openai.js";

/**
 * Evaluation: the scores of one ranking worked by hand, and `POST /api/knowledge/eval` over the
 * set shipped with the project (bench/eval), lexical beside hybrid.
 */

describe("the scores of a ranking", () => {
  it("count each relevant item once, where it first appears", () => {
    // Relevant a and b; ranked: x, a, a, y, b.
    const scores = scoreRanking(new Set(["a", "b"]), ["x", "a", "a", "y", "b"], 3);
    expect(scores.recall_at_k).toBe(0.5);
    expect(scores.mrr).toBe(0.5);
    const dcg = 1 / Math.log2(3) + 1 / Math.log2(6);
    const ideal = 1 + 1 / Math.log2(3);
    expect(scores.ndcg_at_10).toBeCloseTo(dcg / ideal, 10);
  });

  it("are 1 for a perfect ranking and 0 when nothing relevant is found", () => {
    expect(scoreRanking(new Set(["a"]), ["a", "x"], 1)).toEqual({
      recall_at_k: 1,
      mrr: 1,
      ndcg_at_10: 1,
    });
    expect(scoreRanking(new Set(["a"]), ["x", "y"], 5)).toEqual({
      recall_at_k: 0,
      mrr: 0,
      ndcg_at_10: 0,
    });
  });

  it("ignore what lies past rank 10 for nDCG but not for MRR", () => {
    const ranked = [...Array.from({ length: 10 }, (_, i) => `x${i}`), "a"];
    expect(scoreRanking(new Set(["a"]), ranked, 20)).toEqual({
      recall_at_k: 1,
      mrr: 1 / 11,
      ndcg_at_10: 0,
    });
  });
});

const WS = "ws_01JD0000000000000000000601";
const once: Delivery = { receiveCount: 1, maxReceiveCount: 3 };
const SET = join(import.meta.dirname, "../../bench/eval");

describe("POST /api/knowledge/eval", () => {
  let aws: TestAws;
  let fake: FakeOpenAI;
  let app: ReturnType<typeof createServiceApp>;
  const ids = new Map<string, string>();

  const post = (body: unknown) =>
    app.request("/api/knowledge/eval", {
      method: "POST",
      headers: { authorization: `Bearer ${WS}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    [aws, fake] = await Promise.all([startAws(), FakeOpenAI.start()]);
    const embedder = llmFor(fake, { maxRetries: 0, timeoutMs: 3000 }).embedder as Embedder;
    const sources = sourcesOn(aws);
    const indexer = indexerOn(
      aws,
      { text: textLoader(aws.blobs) },
      { size: 400, overlap: 60 },
      embedder,
    );
    for (const file of (await readdir(join(SET, "corpus"))).sort()) {
      const text = await readFile(join(SET, "corpus", file), "utf8");
      const item = await sources.createText(WS, text, file);
      const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
      expect(await indexer.handle(message, once)).toBe("indexed");
      ids.set(file, item.id);
    }
    app = sourcesApp(aws, sources, retrieverOn(aws, embedder));
  }, 60_000);
  afterAll(() => Promise.all([aws.close(), fake.close()]));

  it("reports each ranking the configuration offers over the shipped set", async () => {
    const lines = (await readFile(join(SET, "questions.jsonl"), "utf8")).trim().split("\n");
    const questions = lines.map((line) => {
      const { question, sources } = JSON.parse(line) as { question: string; sources: string[] };
      return { question, source_ids: sources.map((name) => ids.get(name) as string) };
    });
    const res = await post({ questions, k: 3 });
    expect(res.status).toBe(200);
    const report = (await res.json()) as {
      k: number;
      questions: number;
      modes: Record<string, { recall_at_k: number; mrr: number; ndcg_at_10: number } | null>;
    };
    expect(report).toMatchObject({ k: 3, questions: lines.length, modes: { reranked: null } });
    for (const mode of ["lexical", "hybrid"]) {
      const scores = report.modes[mode];
      // The set is written so that plain words find most answers.
      expect(scores?.mrr).toBeGreaterThan(0.5);
      for (const value of Object.values(scores ?? {})) {
        expect(value).toBeGreaterThanOrEqual(0);
        expect(value).toBeLessThanOrEqual(1);
      }
    }
  });

  it("scores passages when a question names them", async () => {
    const pricing = ids.get("pricing.md") as string;
    const res = await post({
      questions: [
        {
          question: "yearly discount nonprofits",
          passages: [{ source_id: pricing, chunk_index: 99 }],
        },
      ],
    });
    const report = (await res.json()) as { modes: { lexical: { mrr: number } } };
    expect(report.modes.lexical.mrr).toBe(0);
  });

  it("refuses a question without its answers, and too many questions", async () => {
    const missing = await post({ questions: [{ question: "pricing" }] });
    expect(missing.status).toBe(400);
    const many = Array.from({ length: 51 }, () => ({ question: "q", source_ids: ["kb_x"] }));
    expect((await post({ questions: many })).status).toBe(400);
  });
});
