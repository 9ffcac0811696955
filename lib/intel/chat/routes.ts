import { streamSSE } from "hono/streaming";
import { DomainError } from "../../errors.js";
import { createModule } from "../../http/app.js";
import { logger } from "../../log.js";
import { chat, conversationOf } from "./contract.js";
import type { GroundedChat } from "./grounded-chat.js";

const wantsStream = (stream: boolean | undefined, accept: string | undefined) =>
  stream === true || (stream === undefined && (accept ?? "").includes("text/event-stream"));

/** Grounded chat: /api/chat. */
export function chatRoutes({ chat: grounded }: { chat: GroundedChat }) {
  const app = createModule();

  app.openapi(chat, async (c) => {
    const body = c.req.valid("json");
    const workspaceId = c.get("workspaceId");
    const request = conversationOf(body);
    if (!wantsStream(body.stream, c.req.header("accept"))) {
      return c.json(await grounded.answer(workspaceId, request), 200);
    }
    const abort = new AbortController();
    // Errors up to here (no model, provider down) are ordinary JSON error responses.
    const events = await grounded.stream(workspaceId, request, abort.signal);
    return streamSSE(c, async (sse) => {
      sse.onAbort(() => abort.abort());
      try {
        for await (const event of events) {
          await sse.writeSSE(
            event.type === "delta"
              ? { event: "delta", data: JSON.stringify({ text: event.text }) }
              : { event: "done", data: JSON.stringify(event.answer) },
          );
        }
      } catch (err) {
        const requestId = c.get("requestId");
        if (!(err instanceof DomainError))
          logger.error("chat stream failed", { requestId, error: err });
        const error =
          err instanceof DomainError
            ? { code: err.code, message: err.message }
            : { code: "internal_error", message: "Something went wrong on our side", requestId };
        await sse.writeSSE({ event: "error", data: JSON.stringify({ error }) });
      }
    });
  });

  return app;
}
