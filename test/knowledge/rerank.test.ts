import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Indexer } from "../../lib/knowledge/indexing/indexer.js";
import { textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { Reranker, type RerankSettings } from "../../lib/knowledge/retrieval/reranker.js";
import type { Sources } from "../../lib/knowledge/sources/sources.js";
import type { Delivery, IndexMessage } from "../../lib/store/queue.js";
import { indexerOn, retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";

/**
 * The second stage against a fake `/rerank` server on 127.0.0.1: the request in the common
 * shape, results in the server's order, and the first stage's answer, said so, when the server
 * fails or does not answer within the budget (a deadline only the injected timer can end).
 */

const WS = "ws_01JD0000000000000000000501";
const once: Delivery = { receiveCount: 1, maxReceiveCount: 3 };

type Handler = (body: RerankBody, res: ServerResponse) => void;
interface RerankBody {
  model: string;
  query: string;
  documents: string[];
  top_n: number;
}

let aws: TestAws;
let sources: Sources;
let indexer: Indexer;
let server: Server;
let baseUrl: string;
let handler: Handler = () => {};
const received: Array<{ path: string; auth: string | undefined; body: RerankBody }> = [];

function serve(req: IncomingMessage, res: ServerResponse) {
  let text = "";
  req.on("data", (part) => {
    text += part;
  });
  req.on("end", () => {
    const body = JSON.parse(text) as RerankBody;
    received.push({ path: req.url ?? "", auth: req.headers.authorization, body });
    handler(body, res);
  });
}

const settings = (over: Partial<RerankSettings> = {}): RerankSettings => ({
  model: "rerank-test",
  baseUrl,
  apiKey: "rk-test",
  timeoutMs: 60_000,
  candidates: 20,
  ...over,
});

beforeAll(async () => {
  aws = await startAws();
  sources = sourcesOn(aws);
  indexer = indexerOn(aws, { text: textLoader(aws.blobs) });
  server = createServer(serve);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
  for (const text of [
    "Pricing pricing pricing: the plans and what they cost.",
    "Pricing pricing: discounts for yearly billing.",
    "Pricing: the zebra plan for nonprofits.",
  ]) {
    await sources.createText(WS, text, text.slice(0, 20));
    const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    expect(await indexer.handle(message, once)).toBe("indexed");
  }
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await aws.close();
});

const texts = (results: Array<{ text: string }>) => results.map((r) => r.text);

describe("reranking", () => {
  it("sends the first candidates in the common shape and answers in the reranker's order", async () => {
    const first = await retrieverOn(aws).retrieve(WS, "pricing", 3);
    expect(first.reranked).toBeUndefined();
    // The fake model prefers the documents the first stage ranked lowest.
    handler = (body, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          results: body.documents
            .map((_, index) => ({ index, relevance_score: index / 10 }))
            .reverse()
            .slice(0, body.top_n),
        }),
      );
    const retriever = retrieverOn(aws, undefined, new Reranker(settings()));
    const reranked = await retriever.retrieve(WS, "pricing", 2);
    expect(received.at(-1)).toEqual({
      path: "/v1/rerank",
      auth: "Bearer rk-test",
      body: { model: "rerank-test", query: "pricing", documents: texts(first.results), top_n: 2 },
    });
    expect(reranked.reranked).toBe(true);
    expect(texts(reranked.results)).toEqual(texts(first.results).reverse().slice(0, 2));
    expect(reranked.results.map((r) => r.score)).toEqual([0.2, 0.1]);
  });

  it("answers from the first stage, saying so, when the reranker does not answer in time", async () => {
    const first = await retrieverOn(aws).search(WS, "pricing", 3);
    const deadline = new AbortController();
    // The server never answers: only the deadline, fired once the request arrived, ends the call.
    handler = () => deadline.abort();
    const retriever = retrieverOn(aws, undefined, new Reranker(settings(), () => deadline.signal));
    const answer = await retriever.retrieve(WS, "pricing", 3);
    expect(answer).toMatchObject({
      reranked: false,
      rerank_error: "The reranker took longer than 60000 ms",
    });
    expect(texts(answer.results)).toEqual(texts(first));
  });

  it.each([
    [(res: ServerResponse) => res.writeHead(503).end("busy"), "The reranker answered HTTP 503"],
    [
      (res: ServerResponse) => res.writeHead(200).end(JSON.stringify({ data: [] })),
      "The reranker's answer is not a list of results",
    ],
  ])("answers from the first stage when the reranker fails (%#)", async (reply, message) => {
    const first = await retrieverOn(aws).search(WS, "pricing", 3);
    handler = (_body, res) => reply(res);
    const retriever = retrieverOn(aws, undefined, new Reranker(settings()));
    const answer = await retriever.retrieve(WS, "pricing", 3);
    expect(answer).toMatchObject({ reranked: false, rerank_error: message });
    expect(texts(answer.results)).toEqual(texts(first));
  });

  it("ignores indexes the server makes up or repeats", async () => {
    handler = (_body, res) =>
      res.writeHead(200).end(
        JSON.stringify({
          results: [
            { index: 7, relevance_score: 9 },
            { index: 1, relevance_score: 0.5 },
            { index: 1, relevance_score: 0.4 },
          ],
        }),
      );
    const first = await retrieverOn(aws).search(WS, "pricing", 3);
    const answer = await retrieverOn(aws, undefined, new Reranker(settings())).retrieve(
      WS,
      "pricing",
      3,
    );
    expect(texts(answer.results)).toEqual([first[1]?.text]);
  });

  it("is skipped when a search asks for the first stage only", async () => {
    const before = received.length;
    const answer = await retrieverOn(aws, undefined, new Reranker(settings())).retrieve(
      WS,
      "pricing",
      3,
      {},
      { rerank: false },
    );
    expect(answer.reranked).toBeUndefined();
    expect(received).toHaveLength(before);
  });
});
