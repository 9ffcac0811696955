import { type InvokerConfig, invoker } from "../../store/functions.js";
import { FetchError, type FetchErrorCode } from "../errors.js";
import type { RenderedPage, Renderer, RenderRequest } from "./renderer.js";

/**
 * Rendering in a function of its own (functions/render.ts), so that only that function carries a
 * browser: the workers and APIs that read pages hold a `LambdaRenderer`, which invokes it
 * synchronously for each page that needs scripts, and get the DOM back, or the same `FetchError`
 * the browser in their own process would have raised. Pages that need no browser never call it.
 *
 * Lambda takes and answers at most 6 MB per synchronous call: a page's document is sent along
 * only while it stays well under that (past it the render function fetches the page itself, through
 * the same safe fetcher), and an answer that would not fit fails as `too_large`.
 */

/** A render request as it travels to the render function: bytes as base64. */
export interface RenderPayload {
  url: string;
  document?: { body: string; contentType: string };
  screenshot?: boolean;
  timeoutMs?: number;
}

export type RenderAnswer =
  | { ok: true; url: string; html: string; screenshot?: string }
  | { ok: false; code: FetchErrorCode; message: string };

/** Lambda's bound on a synchronous call's request and answer. */
const INVOKE_LIMIT_BYTES = 6 * 1024 * 1024;
/** What is left for the document or the DOM and screenshot once base64 and JSON are paid for. */
const CARRIED_BYTES = 4 * 1024 * 1024;

function payloadOf(request: RenderRequest): RenderPayload {
  const { document } = request;
  return {
    url: request.url,
    ...(document && document.body.byteLength <= CARRIED_BYTES
      ? { document: { body: document.body.toString("base64"), contentType: document.contentType } }
      : {}),
    ...(request.screenshot ? { screenshot: true } : {}),
    ...(request.timeoutMs !== undefined ? { timeoutMs: request.timeoutMs } : {}),
  };
}

/** The render function's work: one payload rendered by `renderer`, any failure as an answer. */
export async function answerRender(
  renderer: Renderer,
  payload: RenderPayload,
): Promise<RenderAnswer> {
  try {
    const page = await renderer.render({
      url: payload.url,
      ...(payload.document
        ? {
            document: {
              body: Buffer.from(payload.document.body, "base64"),
              contentType: payload.document.contentType,
            },
          }
        : {}),
      ...(payload.screenshot ? { screenshot: true } : {}),
      ...(payload.timeoutMs !== undefined ? { timeoutMs: payload.timeoutMs } : {}),
    });
    const answer: RenderAnswer = {
      ok: true,
      url: page.url,
      html: page.html,
      ...(page.screenshot ? { screenshot: page.screenshot.toString("base64") } : {}),
    };
    if (Buffer.byteLength(JSON.stringify(answer)) > INVOKE_LIMIT_BYTES) {
      const message = `${payload.url} rendered to more than Lambda can answer (6 MB)`;
      return { ok: false, code: "too_large", message };
    }
    return answer;
  } catch (err) {
    if (err instanceof FetchError) return { ok: false, code: err.code, message: err.message };
    throw err;
  }
}

/**
 * Renders by invoking the render function. Its SDK client is installed beside the bundles of the
 * functions that invoke it and imported at the first render (functions/manifest.ts), so their
 * bundles and cold starts stay as they were, and a process whose pages need no browser never
 * loads it.
 */
export class LambdaRenderer implements Renderer {
  private client: ReturnType<typeof invoker> | undefined;

  constructor(
    /** The render function's name or ARN (`RENDER_FUNCTION_NAME`). */
    private readonly functionName: string,
    private readonly config: InvokerConfig = {},
  ) {}

  async render(request: RenderRequest): Promise<RenderedPage> {
    this.client ??= invoker(this.config);
    const res = await this.client
      .then((lambda) =>
        lambda.invoke(this.functionName, Buffer.from(JSON.stringify(payloadOf(request)))),
      )
      .catch((err: unknown) => {
        throw new FetchError(
          "render_failed",
          `${request.url} could not be rendered: the render function could not be called (${(err as Error).message})`,
        );
      });
    const text = Buffer.from(res.Payload ?? new Uint8Array()).toString("utf8");
    if (res.FunctionError) {
      // The function crashed or ran out of time: Lambda answers its error, not a render answer.
      const reason = (JSON.parse(text || "{}") as { errorMessage?: string }).errorMessage;
      throw new FetchError(
        "render_failed",
        `${request.url} could not be rendered: ${reason ?? res.FunctionError}`,
      );
    }
    const answer = JSON.parse(text) as RenderAnswer;
    if (!answer.ok) throw new FetchError(answer.code, answer.message);
    return {
      url: answer.url,
      html: answer.html,
      screenshot: answer.screenshot ? Buffer.from(answer.screenshot, "base64") : undefined,
    };
  }
}
