import "./process-defaults.js";
import { z } from "zod";
import { loadConfig } from "../../lib/config.js";
import { printReadableLines } from "../../lib/log.js";
import { startLocal } from "./runtime.js";

// For a person at a terminal: one line per request and per worker invocation (lib/log.ts); the
// functions log Powertools' JSON on AWS.
printReadableLines();

/** Start-up problems are one line naming the setting, never a stack trace. */
function cannotStart(message: string): never {
  process.stderr.write(`Cannot start: ${message}\n`);
  process.exit(1);
}

const parsed = z
  .object({
    PORT: z.coerce
      .number({ error: "PORT must be a port number from 0 to 65535 (0 picks a free one)" })
      .int("PORT must be a whole number from 0 to 65535")
      .min(0, "PORT must be from 0 to 65535")
      .max(65535, "PORT must be from 0 to 65535")
      .default(3000),
    HOST: z.string().min(1, "HOST must not be empty").default("127.0.0.1"),
    DATA_DIR: z.string().min(1, "DATA_DIR must not be empty").default("./.data"),
    API_KEY: z.string().min(16, "API_KEY must have at least 16 characters").optional(),
  })
  .safeParse(process.env);
if (!parsed.success) {
  const issue = parsed.error.issues[0];
  const name = String(issue?.path[0] ?? "");
  cannotStart(`${issue?.message} (${name}=${JSON.stringify(process.env[name] ?? "")})`);
}
const env = parsed.data;

/** Why the runtime could not start, as one line naming the setting to change. */
function startFailure(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") {
    return `port ${env.PORT} on ${env.HOST} is in use; set PORT to a free port (0 picks one)`;
  }
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND" || code === "EAI_AGAIN") {
    return `HOST ${env.HOST} is not an address of this machine; set HOST (default 127.0.0.1)`;
  }
  if (code === "EACCES") {
    return `not allowed to listen on port ${env.PORT}; set PORT to 1024 or above (or 0)`;
  }
  const message = err instanceof Error ? err.message : String(err);
  // lib/config.ts and the model settings name every bad setting on one line.
  return message.split("\n")[0] ?? message;
}

const runtime = await startLocal({
  port: env.PORT,
  host: env.HOST,
  dataDir: env.DATA_DIR,
  apiKey: env.API_KEY,
}).catch((err: unknown) => cannotStart(startFailure(err)));

const config = loadConfig();
const model = config.OPENAI_API_KEY
  ? `model ${config.LLM_MODEL} at ${config.OPENAI_BASE_URL ?? "OpenAI"}, ${
      config.EMBEDDING_MODEL
        ? `embeddings ${config.EMBEDDING_MODEL} (hybrid search)`
        : "no EMBEDDING_MODEL (lexical search)"
    }`
  : "no model configured (set OPENAI_API_KEY): chat and intel answer 503, search is lexical";
process.stdout.write(`\nKnowledge Base and Marketing Intel API listening on ${runtime.url}\n`);
process.stdout.write(
  `Console: ${runtime.url}/   API reference: ${runtime.url}/docs   data: ${env.DATA_DIR}\n`,
);
process.stdout.write(`${model}\n`);
if (config.ALLOW_PRIVATE_URLS) {
  process.stdout.write(
    "WARNING: ALLOW_PRIVATE_URLS is on: URL sources, crawls and competitor checks may reach this machine and private networks. Use it only for local development and tests.\n",
  );
}
if (runtime.newKey) {
  process.stdout.write(
    `\nYour API key (shown once; keep it): ${runtime.newKey}\n  curl -H "Authorization: Bearer ${runtime.newKey}" ${runtime.url}/api/knowledge\n\n`,
  );
}

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`Stopping (${signal})\n`);
    runtime.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
