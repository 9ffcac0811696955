import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChatCompletionCreateParams } from "openai/resources/chat/completions";
import type { EmbeddingCreateParams } from "openai/resources/embeddings";

/** What the fake answers to one request. */
export type Reply =
  /** A chat answer; streamed in `deltas` (default: 4-character pieces) when the request streams. */
  | {
      text: string;
      deltas?: string[];
      finishReason?: "stop" | "length";
      /** Drops the connection after this many deltas, mid-answer. */
      failAfter?: number;
      /** A pause before each streamed delta. */
      deltaDelayMs?: number;
    }
  /** A chat answer whose content is this value as JSON. */
  | { json: unknown }
  | { refusal: string }
  /** Explicit vectors for an embeddings request, one per input. */
  | { vectors: number[][] }
  /** An error response, e.g. 429 with `retry-after`, or 500. */
  | { status: number; message?: string; headers?: Record<string, string> }
  /** Waits before answering (a slow provider); a client that gives up ends the wait. */
  | { delayMs: number; reply?: Reply };

export type Endpoint = "chat" | "embeddings";

/**
 * What the fake server does with `response_format`, as real servers differ: honour a strict JSON
 * schema (OpenAI, vLLM); support only `json_object` and refuse `json_schema` with a 400 (older
 * and smaller servers); or ignore it and answer prose around a ```json block (many local ones).
 */
export type FormatSupport = "json_schema" | "json_object" | "ignored";

export interface RecordedRequest {
  endpoint: Endpoint | "other";
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export type Handler = Reply | ((request: RecordedRequest) => Reply | Promise<Reply>);

const STOPWORDS = new Set(
  "a an and are as at be by do does for from has have how i in is it its of on or our the this to was we what when which who why will with you your".split(
    " ",
  ),
);

/** FNV-1a: a stable hash, so vectors are the same in every run. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * A deterministic embedding: every content word (or the concept it belongs to) adds a signed
 * component at a hashed position. Texts sharing words or concepts point the same way, so
 * synonyms in one concept group are close while unrelated texts are nearly orthogonal
 * (1024 dimensions keep hash collisions rare).
 */
export function fakeEmbedding(text: string, dimensions: number, concepts: Map<string, string>) {
  const vector = new Array<number>(dimensions).fill(0);
  for (const raw of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (STOPWORDS.has(raw)) continue;
    const word = raw.length > 3 && raw.endsWith("s") ? raw.slice(0, -1) : raw;
    const concept = concepts.get(word) ?? concepts.get(raw);
    const h = hash(concept ?? word);
    // Meaning outweighs wording, as with a real model: a concept counts three times a word.
    const weight = concept ? 3 : 1;
    vector[h % dimensions] = (vector[h % dimensions] ?? 0) + (h & 0x80000000 ? -weight : weight);
  }
  const norm = Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
  return norm > 0 ? vector.map((x) => x / norm) : vector.map((_, i) => (i === 0 ? 1 : 0));
}

type JsonSchema = { [keyword: string]: unknown };

/** The smallest plausible instance of a JSON schema: what the fake answers when nothing is scripted. */
export function sampleFromSchema(schema: JsonSchema, root: JsonSchema = schema): unknown {
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.split("/").at(-1) ?? "";
    return sampleFromSchema(
      (root.$defs as Record<string, JsonSchema> | undefined)?.[name] ?? {},
      root,
    );
  }
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.anyOf)) {
    const branches = schema.anyOf as JsonSchema[];
    return sampleFromSchema(branches.find((b) => b.type !== "null") ?? {}, root);
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "object":
      return Object.fromEntries(
        Object.entries((schema.properties as Record<string, JsonSchema>) ?? {}).map(([k, v]) => [
          k,
          sampleFromSchema(v, root),
        ]),
      );
    case "array": {
      // Strict schemas carry `minItems` in the description ("at least 6 items"); honour it.
      const least = Number(/at least (\d+) items/.exec(String(schema.description ?? ""))?.[1] ?? 1);
      const item = sampleFromSchema((schema.items as JsonSchema) ?? {}, root);
      return Array.from({ length: Math.max(1, least) }, () => item);
    }
    case "string":
      return "example";
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return true;
    default:
      return null;
  }
}

/** The last ```json block of a request's messages that parses as a schema, if any. */
function schemaInPrompt(body: ChatCompletionCreateParams): JsonSchema | undefined {
  const text = body.messages.map((m) => String(m.content)).join("\n");
  const start = text.lastIndexOf("```json\n");
  const end = text.indexOf("\n```", start + 8);
  if (start < 0 || end < 0) return undefined;
  try {
    const schema = JSON.parse(text.slice(start + 8, end)) as JsonSchema;
    return schema.type === "object" ? schema : undefined;
  } catch {
    return undefined;
  }
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const text = Buffer.concat(parts).toString("utf8");
      try {
        resolve(text ? JSON.parse(text) : undefined);
      } catch (err) {
        reject(err);
      }
    });
    req.on("error", reject);
  });
}

const split = (text: string, size = 4) => text.match(new RegExp(`[\\s\\S]{1,${size}}`, "g")) ?? [];

/**
 * An OpenAI-compatible HTTP server on 127.0.0.1 for tests: Chat Completions (plain, streamed,
 * json_schema), Embeddings (deterministic, concept-aware vectors), scripted errors and slow
 * answers, and a log of every request so tests can assert what a prompt contained.
 */
export class FakeOpenAI {
  readonly requests: RecordedRequest[] = [];
  private readonly queues: Record<Endpoint, Handler[]> = { chat: [], embeddings: [] };
  private readonly fallbacks: Partial<Record<Endpoint, Handler>> = {};
  private readonly conceptOf = new Map<string, string>();
  private support: FormatSupport = "json_schema";
  private readonly server = createServer((req, res) => {
    this.handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: String(err), type: "fake_error" } }));
    });
  });
  private url = "";

  /** Vector size when a request asks for none. */
  constructor(readonly nativeDimensions = 1024) {}

  static async start(nativeDimensions?: number): Promise<FakeOpenAI> {
    const fake = new FakeOpenAI(nativeDimensions);
    await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}/v1`;
    return fake;
  }

  /** The base URL to configure as OPENAI_BASE_URL. */
  get baseURL(): string {
    return this.url;
  }

  /** Answers for the next calls to an endpoint, one each, in order. */
  enqueue(endpoint: Endpoint, ...handlers: Handler[]): this {
    this.queues[endpoint].push(...handlers);
    return this;
  }

  /** The answer for calls when the endpoint's queue is empty. */
  fallback(endpoint: Endpoint, handler: Handler): this {
    this.fallbacks[endpoint] = handler;
    return this;
  }

  /** How `response_format` is treated from now on (until `reset`). */
  formats(support: FormatSupport): this {
    this.support = support;
    return this;
  }

  /** Groups of words the embeddings treat as one concept: `{ price: ["cost", "expensive"] }`. */
  concepts(groups: Record<string, string[]>): this {
    for (const [concept, words] of Object.entries(groups)) {
      for (const word of [concept, ...words]) this.conceptOf.set(word.toLowerCase(), concept);
    }
    return this;
  }

  chatRequests(): ChatCompletionCreateParams[] {
    return this.of("chat") as ChatCompletionCreateParams[];
  }

  embeddingRequests(): EmbeddingCreateParams[] {
    return this.of("embeddings") as EmbeddingCreateParams[];
  }

  /** A chat request's messages as one text, `role: content` per message (the last request by default). */
  prompt(index = -1): string {
    const request = this.chatRequests().at(index);
    if (!request) throw new Error("No chat request was made");
    return request.messages.map((m) => `${m.role}: ${String(m.content)}`).join("\n\n");
  }

  /** Forgets requests, queued answers, fallbacks and concepts. */
  reset(): void {
    this.requests.length = 0;
    this.queues.chat.length = 0;
    this.queues.embeddings.length = 0;
    delete this.fallbacks.chat;
    delete this.fallbacks.embeddings;
    this.conceptOf.clear();
    this.support = "json_schema";
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private of(endpoint: Endpoint): unknown[] {
    return this.requests.filter((r) => r.endpoint === endpoint).map((r) => r.body);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    const endpoint: RecordedRequest["endpoint"] =
      path === "/v1/chat/completions" ? "chat" : path === "/v1/embeddings" ? "embeddings" : "other";
    const request: RecordedRequest = {
      endpoint,
      path,
      headers: req.headers,
      body: await readBody(req),
    };
    this.requests.push(request);
    if (endpoint === "other") {
      return this.send(res, { status: 404, message: `No route ${path}` });
    }
    const format = (request.body as ChatCompletionCreateParams | undefined)?.response_format;
    if (endpoint === "chat" && format?.type === "json_schema" && this.support === "json_object") {
      return this.send(res, { status: 400, message: "response_format json_schema is unsupported" });
    }
    const handler =
      this.queues[endpoint].shift() ?? this.fallbacks[endpoint] ?? this.defaultReply(request);
    const reply = typeof handler === "function" ? await handler(request) : handler;
    await this.reply(req, res, request, reply);
  }

  /**
   * Unscripted answers: a sample of the schema the request asks for, from `response_format` when
   * the server honours it, else from a ```json schema block in the prompt (a model following its
   * instructions), wrapped in prose when the server ignores the format.
   */
  private defaultReply(request: RecordedRequest): Reply {
    if (request.endpoint === "embeddings") return { vectors: [] };
    const body = request.body as ChatCompletionCreateParams;
    const format = body.response_format;
    const honoured =
      this.support === "json_schema" && format?.type === "json_schema"
        ? (format.json_schema.schema as JsonSchema | undefined)
        : undefined;
    const schema = honoured ?? schemaInPrompt(body);
    if (this.support === "ignored" && (format || schema)) {
      const json = schema ? sampleFromSchema(schema) : { answer: "OK." };
      return {
        text: `Sure! Here it is:\n\n\`\`\`json\n${JSON.stringify(json, null, 2)}\n\`\`\`\nAnything else?`,
      };
    }
    if (schema && (honoured || format?.type === "json_object")) {
      return { json: sampleFromSchema(schema) };
    }
    return { text: "OK." };
  }

  private async reply(
    req: IncomingMessage,
    res: ServerResponse,
    request: RecordedRequest,
    reply: Reply,
  ) {
    if ("delayMs" in reply) {
      const waited = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(true), reply.delayMs);
        res.once("close", () => {
          clearTimeout(timer);
          resolve(false);
        });
      });
      if (waited) await this.reply(req, res, request, reply.reply ?? this.defaultReply(request));
      return;
    }
    if ("status" in reply) return this.send(res, reply);
    if (request.endpoint === "embeddings") return this.embeddings(res, request, reply);
    const body = request.body as ChatCompletionCreateParams;
    const answer =
      "json" in reply
        ? { text: JSON.stringify(reply.json) }
        : "refusal" in reply
          ? { text: "", refusal: reply.refusal }
          : "text" in reply
            ? reply
            : { text: "" };
    if (body.stream) return this.stream(res, body, answer);
    const usage = { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 };
    this.json(res, 200, {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: "refusal" in answer ? null : answer.text,
            refusal: "refusal" in answer ? answer.refusal : null,
          },
          finish_reason: ("finishReason" in answer && answer.finishReason) || "stop",
        },
      ],
      usage,
    });
  }

  private async stream(
    res: ServerResponse,
    body: ChatCompletionCreateParams,
    answer: {
      text: string;
      deltas?: string[];
      finishReason?: string;
      failAfter?: number;
      deltaDelayMs?: number;
    },
  ) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model: body.model, choices, ...extra })}\n\n`;
    const deltas = answer.deltas ?? split(answer.text);
    for (const [i, content] of deltas.entries()) {
      if (answer.failAfter !== undefined && i >= answer.failAfter) {
        // Let what was written reach the client first: the answer breaks off mid-stream.
        await new Promise((resolve) => setTimeout(resolve, 20));
        res.destroy();
        return;
      }
      if (answer.deltaDelayMs) await new Promise((r) => setTimeout(r, answer.deltaDelayMs));
      if (res.destroyed) return;
      res.write(chunk([{ index: 0, delta: { content }, finish_reason: null }]));
    }
    res.write(chunk([{ index: 0, delta: {}, finish_reason: answer.finishReason ?? "stop" }]));
    if (body.stream_options?.include_usage) {
      res.write(
        chunk([], {
          usage: {
            prompt_tokens: 42,
            completion_tokens: deltas.length,
            total_tokens: 42 + deltas.length,
          },
        }),
      );
    }
    res.end("data: [DONE]\n\n");
  }

  private embeddings(res: ServerResponse, request: RecordedRequest, reply: Reply) {
    const body = request.body as EmbeddingCreateParams;
    const inputs = (Array.isArray(body.input) ? body.input : [body.input]) as string[];
    const dimensions = body.dimensions ?? this.nativeDimensions;
    const scripted = "vectors" in reply ? reply.vectors : [];
    const vectors = inputs.map(
      (text, i) => scripted[i] ?? fakeEmbedding(text, dimensions, this.conceptOf),
    );
    const tokens = inputs.reduce((sum, t) => sum + t.split(/\s+/).length, 0);
    this.json(res, 200, {
      object: "list",
      model: body.model,
      // Reversed on purpose: clients must order by `index`, as the API allows.
      data: vectors
        .map((embedding, index) => ({
          object: "embedding",
          index,
          embedding:
            body.encoding_format === "base64"
              ? Buffer.from(Float32Array.from(embedding).buffer).toString("base64")
              : embedding,
        }))
        .reverse(),
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }

  private send(
    res: ServerResponse,
    reply: { status: number; message?: string; headers?: Record<string, string> },
  ) {
    this.json(
      res,
      reply.status,
      {
        error: {
          message: reply.message ?? `Scripted ${reply.status}`,
          type: "fake_error",
          code: null,
        },
      },
      reply.headers,
    );
  }

  private json(
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  }
}
