import type { ErrorBody, Issue, PendingUpload } from "./api-types.js";

/**
 * The public API, from the browser: one error type for every failure, the key from this tab's
 * sessionStorage only (sent as a header, never in a URL, never logged), server-sent chat events
 * and presigned uploads with progress.
 */

/** The API's root: the console's script is served at `<root>/console/app.js`. */
export const apiRoot = new URL("..", import.meta.url);

const KEY = "kbi.apiKey";

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn: (key: string) => sessionStorage.setItem(KEY, key),
  signOut: () => sessionStorage.removeItem(KEY),
};

/** Every failure the console shows: the API's code and message, the HTTP status, the details. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    /** How long the API asked us to wait (`Retry-After`, a 429's or a 503's), in milliseconds. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }

  get issues(): Issue[] {
    const issues = this.details?.issues;
    return Array.isArray(issues) ? (issues as Issue[]) : [];
  }
}

/** Called when the key stops working (401): the app signs out and says why. */
let onUnauthorized: (error: ApiError) => void = () => undefined;
export const whenUnauthorized = (handler: (error: ApiError) => void) => {
  onUnauthorized = handler;
};

/** A `Retry-After` header (seconds, or an HTTP date) in milliseconds; undefined if unreadable. */
function retryAfterOf(value: string | null): number | undefined {
  if (!value?.trim()) return undefined;
  const ms = /^\d+$/.test(value.trim()) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.max(ms, 0) : undefined;
}

async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => "");
  const retryAfter = retryAfterOf(response.headers.get("retry-after"));
  try {
    // Read warily: a body that is not the API's may parse too.
    const { error } = JSON.parse(text) as Partial<ErrorBody>;
    if (error?.code) {
      const { status } = response;
      const details = error.details as Record<string, unknown> | undefined;
      return new ApiError(status, error.code, error.message ?? "", details, retryAfter);
    }
  } catch {
    // Not the API's error body (a proxy's page, say): described by its status below.
  }
  const message = response.statusText || text;
  return new ApiError(response.status, `http_${response.status}`, message, undefined, retryAfter);
}

export interface CallOptions {
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  /** Use this key instead of the session's (signing in). */
  key?: string;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

function urlOf(path: string, query: CallOptions["query"] = {}): URL {
  const url = new URL(path.replace(/^\//, ""), apiRoot);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "")
      url.searchParams.set(name, `${value}`);
  }
  return url;
}

async function send(method: string, path: string, options: CallOptions): Promise<Response> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key ?? session.key();
  if (key) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(urlOf(path, options.query), {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === "AbortError") throw err;
    throw new ApiError(0, "network_error", "The service could not be reached");
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (error.status === 401 && !options.key) onUnauthorized(error);
    throw error;
  }
  return response;
}

/** One call: the parsed JSON answer (undefined for 204), or an ApiError. */
export async function api<T = unknown>(
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<T> {
  const response = await send(method, path, options);
  return (response.status === 204 ? undefined : await response.json()) as T;
}

/**
 * A binary answer (a screenshot) as an object URL an image can show: an image's own request
 * could not carry the key. The caller revokes it when the image goes.
 */
export async function objectUrl(path: string): Promise<string> {
  const response = await send("GET", path, {});
  return URL.createObjectURL(await response.blob());
}

export interface ChatEvent {
  event: string;
  data: unknown;
}

/** POSTs a chat message and hands over each server-sent event as it arrives. */
export async function chatStream(
  body: Record<string, unknown>,
  onEvent: (event: ChatEvent) => void,
  signal?: AbortSignal,
): Promise<void> {
  const response = await send("POST", "api/chat", {
    body: { ...body, stream: true },
    headers: { accept: "text/event-stream" },
    ...(signal ? { signal } : {}),
  });
  if (!response.body) throw new ApiError(0, "stream_unavailable", "The answer could not be read");
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, "\n");
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length > 0) onEvent({ event, data: JSON.parse(data.join("\n")) });
    }
  }
}

/** S3's error answer (XML) in words. */
function storageError(status: number, xml: string): ApiError {
  const tag = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
  return new ApiError(
    status,
    tag("Code") ?? `http_${status}`,
    tag("Message") ?? "The file storage refused the upload",
  );
}

/**
 * A file through the presigned upload: the API creates the source and a form, the browser posts
 * the file straight to storage (XMLHttpRequest, whose upload reports progress).
 */
export async function uploadFile(
  file: File,
  onProgress: (sent: number, total: number) => void,
): Promise<PendingUpload> {
  const pending = await api<PendingUpload>("POST", "api/knowledge/uploads", {
    body: {
      filename: file.name,
      contentType: file.type || "application/octet-stream",
      bytes: file.size,
    },
  });
  const form = new FormData();
  for (const [name, value] of Object.entries(pending.fields)) form.append(name, value);
  form.append("file", file);
  try {
    await new Promise<void>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", pending.uploadUrl);
      xhr.upload.onprogress = (event) => onProgress(event.loaded, event.total || file.size);
      xhr.onload = () =>
        xhr.status < 300 ? resolve() : reject(storageError(xhr.status, xhr.responseText));
      xhr.onerror = () =>
        reject(new ApiError(0, "network_error", "The file storage could not be reached"));
      xhr.send(form);
    });
  } catch (err) {
    // The source would wait for its file until the upload expires: it goes now.
    const removed = await api("DELETE", `api/knowledge/${pending.id}`).then(
      () => true,
      () => false,
    );
    const { status, code, message } = err as ApiError;
    throw new ApiError(
      status,
      code,
      `${message.replace(/\.$/, "")}. ${file.name} was not added${removed ? "" : " (it is listed until its upload expires)"}; try again.`,
    );
  }
  onProgress(file.size, file.size);
  return pending;
}
