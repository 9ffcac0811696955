import http from "node:http";
import { expect } from "vitest";

/**
 * Raw requests to the running service and the checks every answer must pass, whatever was sent:
 * no 5xx, the one error body shape, nothing of the implementation (stack frames, file paths,
 * AWS or emulator error names) in a body.
 */

export interface RawRequest {
  method: string;
  /** Path and query; bytes a request line cannot carry are percent-encoded, the rest sent as written. */
  path: string;
  headers?: Record<string, string | string[]>;
  body?: string | Uint8Array;
  /** A bearer key; null sends no Authorization header. */
  key: string | null;
  /** Aborts the request (and rejects) when it fires: a time limit is `AbortSignal.timeout(ms)`. */
  signal?: AbortSignal;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });

/**
 * Sends a request as written, through node:http rather than fetch, so a hostile client can do
 * what fetch refuses: a body on GET, repeated headers, odd methods, unnormalised paths.
 */
export function send(baseUrl: string, request: RawRequest): Promise<Answer> {
  const { hostname, port } = new URL(baseUrl);
  const headers: Record<string, string | string[]> = { ...request.headers };
  if (request.key !== null) headers.authorization = `Bearer ${request.key}`;
  const body = typeof request.body === "string" ? Buffer.from(request.body, "utf8") : request.body;
  if (body !== undefined) headers["content-length"] = String(body.byteLength);
  const path = request.path.replace(/[^\x21-\x7e]/gu, (c) =>
    encodeURIComponent(/^[\ud800-\udfff]$/.test(c) ? "\ufffd" : c),
  );
  return new Promise((resolve, reject) => {
    const req = http.request(
      { hostname, port, method: request.method, path, headers, agent, signal: request.signal },
      (res) => {
        const parts: Buffer[] = [];
        const answer = (): Answer => {
          const answerHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            for (const v of Array.isArray(value) ? value : [value ?? ""])
              answerHeaders.append(name, v);
          }
          return {
            status: res.statusCode ?? 0,
            headers: answerHeaders,
            text: Buffer.concat(parts).toString("utf8"),
          };
        };
        res.on("data", (part: Buffer) => parts.push(part));
        res.on("error", (err) => {
          // The gateway does not read a body no function wants (a 2 MB body on GET /openapi.json):
          // it answers with `connection: close` and closes, and the reset of the unread bytes may
          // cut the answer's tail on the way. The head was given; that is the answer judged.
          if (res.headers.connection === "close" && body !== undefined) resolve(answer());
          else reject(err);
        });
        res.on("end", () => resolve(answer()));
      },
    );
    req.on("error", (err: NodeJS.ErrnoException) => {
      // The documented keep-alive race (see `request.reusedSocket`): the server closed an idle
      // socket just as this request reused it, seen as a reset or, while a large body is still
      // being written, as a broken pipe. It is sent once more; a failure that repeats fails.
      if (req.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE")) {
        send(baseUrl, { ...request, headers: { ...request.headers, connection: "close" } }).then(
          resolve,
          reject,
        );
      } else {
        reject(err);
      }
    });
    req.end(body);
  });
}

/** A form as multipart bytes and the content type that names their boundary. */
export async function multipart(
  form: FormData,
): Promise<{ body: Uint8Array; contentType: string }> {
  const encoded = new Response(form);
  return {
    body: new Uint8Array(await encoded.arrayBuffer()),
    contentType: encoded.headers.get("content-type") ?? "multipart/form-data",
  };
}

/** What gives an implementation away when it reaches a client. */
const LEAKS: Array<[string, RegExp]> = [
  ["a stack frame", /^\s+at .+(\(|:\d+:\d+)/m],
  ["a stack frame", /\bat (async )?[\w$.<>]+ \([^)]*:\d+:\d+\)/],
  ["the repository path", new RegExp(process.cwd().replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))],
  ["a source file path", /(node_modules|\/(lib|functions)\/[\w/-]+\.[jt]s\b|\.[jt]s:\d+)/],
  ["a JavaScript error name", /\b(TypeError|ReferenceError|SyntaxError|RangeError|URIError)\b/],
  [
    "an AWS or emulator error",
    /(ValidationException|ResourceNotFoundException|ConditionalCheckFailed|ProvisionedThroughput|NoSuchKey|NoSuchBucket|AccessDenied|dynalite|s3rver|\$metadata)/,
  ],
  ["an internal error", /"internal_error"/],
];

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown; requestId?: string };
}

/** The parsed error body of an answer, or a failure naming what is wrong with it. */
export function errorBodyOf(label: string, answer: Answer): ErrorBody {
  expect(answer.headers.get("content-type") ?? "", `${label}: error media type`).toMatch(
    /^application\/json/,
  );
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    expect.fail(`${label}: the error body is not JSON: ${answer.text.slice(0, 300)}`);
  }
  expect(body, `${label}: error body`).toEqual({
    error: expect.objectContaining({
      code: expect.stringMatching(/^[a-z][a-z_]*$/),
      message: expect.any(String),
    }),
  });
  const error = (body as ErrorBody).error;
  expect(
    Object.keys(error).filter((k) => !["code", "message", "details", "requestId"].includes(k)),
    `${label}: unexpected error fields`,
  ).toEqual([]);
  expect(error.message.length, `${label}: empty error message`).toBeGreaterThan(0);
  return body as ErrorBody;
}

/** A script or stylesheet the service ships (the console, the docs viewer): code, not a message. */
const STATIC_CODE = /^(text|application)\/(javascript|css)\b/;

/**
 * Every answer, whatever the request: below 500, well-formed when an error, and leak-free. A
 * successful static asset is exempt from the leak patterns: a viewer's script names `TypeError`
 * in its own code, which reveals nothing of the service.
 */
export function expectWellFormed(label: string, answer: Answer): void {
  const excerpt = answer.text.slice(0, 500);
  expect(answer.status, `${label} answered ${answer.status}: ${excerpt}`).toBeLessThan(500);
  const shipped = answer.status < 400 && STATIC_CODE.test(answer.headers.get("content-type") ?? "");
  for (const [what, pattern] of shipped ? [] : LEAKS) {
    const found = pattern.exec(answer.text)?.[0];
    expect(found, `${label}: the body shows ${what}: ${excerpt}`).toBeUndefined();
  }
  if (answer.status >= 400) errorBodyOf(label, answer);
}

/** Printable ASCII as is, anything else as `\u{…}`, so a report shows what was sent. */
const visible = (text: string) =>
  text.replace(/[^\x20-\x7e]/gu, (c) => `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`);

/** How many times `unit` repeats from `at` on. */
function repeats(text: string, unit: string, at: number): number {
  let count = 0;
  while (text.startsWith(unit, at + count * unit.length)) count++;
  return count;
}

/** Parts of a shape, each repeated `times` in a row. */
interface Group {
  parts: string[];
  times: number;
}

/** Adds a part, folding a run of parts that repeats (the lines of a file) into one group. */
function addPart(groups: Group[], part: string): void {
  groups.push({ parts: [part], times: 1 });
  for (let k = 1; k <= 4; k++) {
    const tail = groups.slice(-k);
    if (tail.length < k || tail.some((g) => g.times !== 1)) return;
    const parts = tail.map((g) => g.parts[0] ?? "");
    const same = (a: string[]) => a.length === k && a.every((p, i) => p === parts[i]);
    const before = groups[groups.length - k - 1];
    if (before && before.times > 1 && same(before.parts)) {
      before.times++;
      groups.splice(-k);
      return;
    }
    const previous = groups.slice(-2 * k, -k);
    if (previous.length === k && previous.every((g) => g.times === 1)) {
      if (same(previous.map((g) => g.parts[0] ?? ""))) {
        groups.splice(-2 * k, 2 * k, { parts, times: 2 });
        return;
      }
    }
  }
}

const render = (groups: Group[]) =>
  groups
    .map((g) => {
      const parts = g.parts.join(" + ");
      return g.times === 1 ? parts : `(${parts})×${g.times}`;
    })
    .join(" + ");

/**
 * A text by its runs, up to about `max` characters: `'<div>'×5000 + 'x' + '</div>'×5000`, or
 * `('# a' + '#'×2000 + 'b\n')×450` for repeated lines. A report names the shape of a megabyte
 * of input instead of printing its first few hundred bytes.
 */
export function shapeOf(text: string, max = 300): string {
  const groups: Group[] = [];
  let literal = "";
  let at = 0;
  const flush = () => {
    if (literal) addPart(groups, `'${visible(literal)}'`);
    literal = "";
  };
  while (at < text.length && render(groups).length + literal.length < max) {
    let best = { unit: "", count: 0 };
    for (let period = 1; period <= 24 && at + period * 8 <= text.length; period++) {
      const unit = text.slice(at, at + period);
      const count = repeats(text, unit, at);
      if (count * period > best.count * best.unit.length) best = { unit, count };
    }
    if (best.count >= 8) {
      flush();
      addPart(groups, `'${visible(best.unit)}'×${best.count}`);
      at += best.count * best.unit.length;
    } else {
      literal += text[at];
      at++;
    }
  }
  flush();
  return `${render(groups)}${at < text.length ? ` + … (${text.length} characters)` : ""}`;
}

/** A request as a report line: method, path, content type and the shape of its body. */
export function describeRequest(request: RawRequest, max = 300): string {
  const body =
    typeof request.body === "string"
      ? shapeOf(request.body, max)
      : request.body
        ? shapeOf(Buffer.from(request.body).toString("latin1"), max)
        : "";
  return `${request.method} ${shapeOf(request.path)} ${JSON.stringify(request.headers ?? {})} ${body}`;
}
