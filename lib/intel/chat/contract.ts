import { createRoute, z } from "@hono/zod-openapi";
import { commonErrors, jsonBody, NoQuery, oneOrSeveral } from "../../http/schemas.js";
import { FilterSchema } from "../../knowledge/retrieval/filter-expression.js";
import { CitationSchema, modelErrors } from "../schemas.js";
import type { ChatRequest, ChatTurn } from "./grounded-chat.js";

const turns = z
  .array(
    z.strictObject({
      role: z.enum(["user", "assistant"]),
      content: z.string().max(8000),
    }),
  )
  .max(40);

export const ChatBody = z
  .strictObject({
    message: z
      .string()
      .trim()
      .min(1)
      .max(4000)
      .optional()
      .openapi({ description: "The question; or give the whole conversation as `messages`" }),
    messages: turns.optional().openapi({
      description:
        "The conversation, oldest first, ending with the user's question (without `message`); with `message`, the turns before it. The most recent turns are kept",
    }),
    history: turns.optional().openapi({
      description: "Earlier turns, oldest first, as beside `message` (the same as `messages`)",
    }),
    source_ids: oneOrSeveral(
      z.string().max(64),
      "Ground the answer in these sources only",
      100,
    ).optional(),
    filters: FilterSchema.optional(),
    stream: z.boolean().optional().openapi({
      description: "Answer as server-sent events (as does `Accept: text/event-stream`)",
    }),
  })
  .superRefine((body, ctx) => {
    if (body.history && body.messages) {
      ctx.addIssue({
        code: "custom",
        path: ["history"],
        message: "Give the earlier turns as `messages` or as `history`, not both",
      });
    }
    const last = body.messages?.at(-1);
    if (body.message !== undefined) return;
    if (!last) {
      ctx.addIssue({
        code: "custom",
        path: ["message"],
        message: "Give `message`, or `messages` ending with the user's question",
      });
    } else if (last.role !== "user" || !last.content.trim()) {
      ctx.addIssue({
        code: "custom",
        path: ["messages"],
        message: "Without `message`, the last of `messages` is the question: a user turn with text",
      });
    }
  })
  .openapi("ChatRequest");

/** A chat request body as the question, the turns before it and the sources to ground in. */
export function conversationOf(body: z.output<typeof ChatBody>): ChatRequest {
  const earlier = body.history ?? body.messages ?? [];
  const ask = (message: string, history: ChatTurn[]) => ({
    message,
    history,
    sourceIds: body.source_ids,
    filters: body.filters,
  });
  if (body.message !== undefined) return ask(body.message, earlier);
  return ask(earlier.at(-1)?.content.trim() ?? "", earlier.slice(0, -1));
}

export const ChatAnswerSchema = z
  .strictObject({
    answer: z.string().openapi({ description: "`[n]` refers to `citations[n-1]`" }),
    citations: z.array(CitationSchema),
  })
  .openapi("ChatAnswer");

const EVENTS = [
  'Server-sent events: `delta` events carry `{"text"}` pieces of the answer; a final `done` event',
  "carries the whole `ChatAnswer`; a failure after streaming began is an `error` event with the",
  "usual error body.",
].join(" ");

export const chat = createRoute({
  operationId: "chat",
  method: "post",
  path: "/api/chat",
  tags: ["Chat"],
  summary: "Ask a question grounded in the brand profile and enabled sources",
  description:
    "Retrieves the most relevant chunks of enabled, indexed sources (of `source_ids` only, and matching `filters`, when given) and answers from them and the brand profile only, citing the chunks it used. A conversation continues with `messages` (or `message` and `history`): a follow-up is searched together with the question before it. When no passage supports an answer (an empty knowledge base, only disabled sources, nothing matching), it says so without calling the model.",
  request: { query: NoQuery, body: jsonBody(ChatBody) },
  responses: {
    200: {
      description: "The answer with its citations",
      content: {
        "application/json": { schema: ChatAnswerSchema },
        "text/event-stream": { schema: z.string().openapi({ description: EVENTS }) },
      },
    },
    ...commonErrors,
    ...modelErrors,
  },
});

export const chatContract = [chat];
