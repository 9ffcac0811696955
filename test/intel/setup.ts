import { KeyStore } from "../../lib/auth/keys.js";
import { createServiceApp } from "../../lib/http/app.js";
import { bearerAuth } from "../../lib/http/auth.js";
import { BrandProfiles } from "../../lib/intel/brand/profiles.js";
import { brandRoutes } from "../../lib/intel/brand/routes.js";
import { GroundedChat } from "../../lib/intel/chat/grounded-chat.js";
import { chatRoutes } from "../../lib/intel/chat/routes.js";
import { textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { type SourceItem, Sources } from "../../lib/knowledge/sources/sources.js";
import type { LlmSettings } from "../../lib/llm/settings.js";
import type { IndexMessage } from "../../lib/store/queue.js";
import { llmFor } from "../llm/helpers.js";
import { indexerOn, retrieverOn, roomyQuotas, startAws } from "../support/aws.js";
import { FakeOpenAI } from "../support/fake-openai.js";

export interface Workspace {
  id: string;
  key: string;
}

/**
 * The intel module as a function would serve it, over emulated DynamoDB and S3 and the fake
 * model server: real keys, real indexing into the persisted search index (with embeddings, as
 * the index worker does when an embedding model is configured).
 */
export async function startIntel(settings: Partial<LlmSettings> = {}) {
  const [aws, fake] = await Promise.all([startAws(), FakeOpenAI.start()]);
  const { table, blobs } = aws;
  const keys = new KeyStore(table, 0);
  const sources = new Sources({ table, blobs, indexQueue: aws.queue("index") });
  const llm = llmFor(fake, settings);
  const indexer = indexerOn(
    aws,
    { text: textLoader(blobs) },
    { size: 600, overlap: 100 },
    llm.embedder,
  );
  const brands = new BrandProfiles(table);
  const retriever = retrieverOn(aws, llm.embedder);
  const app = createServiceApp({
    authenticate: bearerAuth(keys),
    modules: [
      brandRoutes({ brands }),
      chatRoutes({
        chat: new GroundedChat({ retriever, brands, llm: llm.chat, quotas: roomyQuotas(table) }),
      }),
    ],
  });

  return {
    aws,
    fake,
    sources,
    brands,

    async workspace(name: string): Promise<Workspace> {
      const { id } = await keys.createWorkspace(name);
      return { id, key: (await keys.createKey(id)).key };
    },

    /** A text source, indexed and embedded. */
    async addSource(workspaceId: string, text: string, name: string): Promise<SourceItem> {
      const item = await sources.createText(workspaceId, text, name);
      const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
      const outcome = await indexer.handle(message, { receiveCount: 1, maxReceiveCount: 3 });
      if (outcome !== "indexed") throw new Error(`Source ${name} was not indexed: ${outcome}`);
      return sources.get(workspaceId, item.id);
    },

    call(
      workspace: Workspace,
      method: string,
      path: string,
      json?: unknown,
      headers: Record<string, string> = {},
    ): Promise<Response> {
      return Promise.resolve(
        app.request(path, {
          method,
          headers: {
            authorization: `Bearer ${workspace.key}`,
            ...(json === undefined ? {} : { "content-type": "application/json" }),
            ...headers,
          },
          ...(json === undefined ? {} : { body: JSON.stringify(json) }),
        }),
      );
    },

    async close() {
      await Promise.all([aws.close(), fake.close()]);
    },
  };
}

export type Intel = Awaited<ReturnType<typeof startIntel>>;

export interface SseEvent {
  event: string;
  data: unknown;
}

/** The events of a server-sent event stream, read to its end. */
export async function readEvents(res: Response): Promise<SseEvent[]> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split("\n");
      const event =
        lines
          .find((l) => l.startsWith("event:"))
          ?.slice(6)
          .trim() ?? "message";
      const data = lines
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart())
        .join("\n");
      return { event, data: JSON.parse(data) as unknown };
    });
}
