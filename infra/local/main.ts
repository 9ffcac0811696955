import { z } from "zod";
import { logger } from "../../lib/log.js";
import { startLocal } from "./runtime.js";

// The Lambdas run Node 22; locally Node 20 is supported, so the SDK's upgrade notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const env = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().default("127.0.0.1"),
    DATA_DIR: z.string().min(1).default("./.data"),
    API_KEY: z.string().min(16).optional(),
  })
  .parse(process.env);

const runtime = await startLocal({
  port: env.PORT,
  host: env.HOST,
  dataDir: env.DATA_DIR,
  apiKey: env.API_KEY,
});

process.stdout.write(`\nKnowledge Base and Marketing Intel API listening on ${runtime.url}\n`);
process.stdout.write(
  `Console: ${runtime.url}/   API reference: ${runtime.url}/docs   data: ${env.DATA_DIR}\n`,
);
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
    logger.info("stopping", { signal });
    runtime.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
