import { createWriteStream } from "node:fs";
import { join, resolve } from "node:path";
import { finished } from "node:stream/promises";
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { S3Client } from "@aws-sdk/client-s3";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { KeyStore } from "../../lib/auth/keys.js";
import { isId } from "../../lib/ids.js";
import { BrandProfiles } from "../../lib/intel/brand/profiles.js";
import { DynamoWriterLock, SearchIndex, type SearchLocation } from "../../lib/search/index.js";
import { Blobs } from "../../lib/store/blobs.js";
import { Table } from "../../lib/store/table.js";
import { WebhookEndpoints } from "../../lib/webhooks/endpoints.js";
import { type ErasureDeps, eraseWorkspace, remainsOf } from "../../lib/workspaces/erasure.js";
import { bundleLines } from "../../lib/workspaces/export/bundle.js";
import { headerLine, noRecords, trailerLine } from "../../lib/workspaces/export/format.js";
import { forgetDefaultWorkspace } from "../local/bootstrap.js";
import { ensureTable, startDynamo, startS3 } from "../local/emulators.js";
import { BUCKET_NAME, runningRuntime, TABLE_NAME } from "../local/runtime.js";

// The Lambdas run Node 22; locally Node 20 is supported, so the SDK's upgrade notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const usage = `Take a workspace's data out, or erase it for good.

  npm run workspace -- export ws_... [--out file.ndjson]
      Every record of the workspace as NDJSON (the bundle of POST /api/export, without today's
      quota usage): to the file, or to standard output.
  npm run workspace -- delete ws_... --yes
      Erases the workspace: its API keys, every record of its partition, its entries in shared
      partitions, its files (with their older versions) and its search index, then checks that
      nothing is left. Safe to run again, also after it was cut short. Refused without --yes.

With TABLE_NAME and BUCKET_NAME set, works on AWS (credentials and region from the environment;
SEARCH_INDEX_URI as the functions have it, default s3://<bucket>/search). Otherwise on the local
data in DATA_DIR (default ./.data), with npm start stopped.`;

interface Target extends ErasureDeps {
  close(): Promise<void>;
}

/**
 * Where the search index keeps a workspace's files in the bucket, when its location is in the
 * bucket (the deploy's default `s3://<bucket>/search`).
 */
function searchPrefixIn(uri: string, bucket: string): ((ws: string) => string) | undefined {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/.exec(uri);
  if (!match || match[1] !== bucket) return undefined;
  const base = (match[2] ?? "").replace(/\/+$/, "");
  return (ws) => (base ? `${base}/${ws}/` : `${ws}/`);
}

async function openTarget(): Promise<Target | string> {
  const doc = (client: DynamoDBClient) =>
    DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const env = process.env;
  if (env.TABLE_NAME && env.BUCKET_NAME) {
    const table = new Table(doc(new DynamoDBClient({})), env.TABLE_NAME);
    const uri = env.SEARCH_INDEX_URI ?? `s3://${env.BUCKET_NAME}/search`;
    // An S3-compatible endpoint set for the SDK (an emulator) is the engine's too.
    const endpoint = env.AWS_ENDPOINT_URL_S3;
    const location: SearchLocation =
      uri.startsWith("s3://") && endpoint
        ? {
            uri,
            s3: {
              endpoint,
              region: env.AWS_REGION ?? "us-east-1",
              accessKeyId: env.AWS_ACCESS_KEY_ID ?? "",
              secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? "",
            },
          }
        : { uri };
    return {
      table,
      blobs: new Blobs(
        new S3Client({ forcePathStyle: ["true", "1"].includes(env.S3_FORCE_PATH_STYLE ?? "") }),
        env.BUCKET_NAME,
      ),
      keys: new KeyStore(table, 0),
      search: new SearchIndex({ location, lock: new DynamoWriterLock(table) }),
      searchPrefix: searchPrefixIn(uri, env.BUCKET_NAME),
      close: async () => {},
    };
  }
  const dataDir = env.DATA_DIR ?? "./.data";
  if (await runningRuntime(dataDir)) return `Stop npm start on ${dataDir} first`;
  const local = {
    region: "us-east-1",
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  };
  const [dynamo, s3] = await Promise.all([
    startDynamo(join(dataDir, "dynamodb")),
    startS3(join(dataDir, "s3"), [BUCKET_NAME]),
  ]);
  const client = new DynamoDBClient({ ...local, endpoint: dynamo.endpoint });
  await ensureTable(client, TABLE_NAME);
  const table = new Table(doc(client), TABLE_NAME);
  return {
    table,
    blobs: new Blobs(
      new S3Client({ ...local, endpoint: s3.endpoint, forcePathStyle: true }),
      BUCKET_NAME,
    ),
    keys: new KeyStore(table, 0),
    search: new SearchIndex({
      location: { uri: resolve(dataDir, "search") },
      lock: new DynamoWriterLock(table),
    }),
    close: async () => {
      await Promise.all([dynamo.close(), s3.close()]);
    },
  };
}

/** Writes the workspace's bundle to `out` (standard output without one); answers its counts. */
async function exportTo(target: Target, workspaceId: string, out: string | undefined) {
  const stream = out ? createWriteStream(out) : process.stdout;
  const write = (line: string) =>
    stream.write(`${line}\n`)
      ? undefined
      : new Promise<void>((done) => stream.once("drain", () => done()));
  const counts = noRecords();
  await write(headerLine(workspaceId, null, new Date().toISOString()));
  // Today's quota usage needs the deployment's limits, which this command does not read: the
  // bundle of POST /api/export has it, this one leaves it out.
  const deps = {
    ...target,
    brands: new BrandProfiles(target.table),
    endpoints: new WebhookEndpoints(target.table),
  };
  for await (const line of bundleLines(deps, workspaceId)) {
    counts[line.kind]++;
    await write(line.text);
  }
  await write(trailerLine(counts, new Date().toISOString()));
  if (out) {
    stream.end();
    await finished(stream);
  }
  return counts;
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: "string" },
      yes: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, workspaceId] = positionals;
  if (values.help || !command || !["export", "delete"].includes(command)) {
    process.stdout.write(`${usage}\n`);
    return values.help ? 0 : 2;
  }
  if (!workspaceId || !isId("workspace", workspaceId)) {
    process.stderr.write(`${command} needs a workspace id (ws_ and 26 characters)\n`);
    return 2;
  }
  if (command === "delete" && !values.yes) {
    process.stderr.write(
      `This erases every record, file, index and key of ${workspaceId} for good.\n` +
        "Export it first if it is wanted (npm run workspace -- export), then run again with --yes.\n",
    );
    return 2;
  }
  const target = await openTarget();
  if (typeof target === "string") {
    process.stderr.write(`${target}\n`);
    return 1;
  }
  try {
    if (command === "export") {
      if (!(await target.keys.getWorkspace(workspaceId))) {
        process.stderr.write(`No workspace ${workspaceId}\n`);
        return 1;
      }
      const counts = await exportTo(target, workspaceId, values.out);
      const summary = Object.entries(counts)
        .map(([kind, n]) => `${n} ${kind}`)
        .join(", ");
      process.stderr.write(
        `exported ${workspaceId}${values.out ? ` to ${values.out}` : ""}: ${summary}\n`,
      );
      return 0;
    }
    for (const { step, removed } of await eraseWorkspace(target, workspaceId)) {
      process.stdout.write(`${step}: ${removed} removed\n`);
    }
    if (await forgetDefaultWorkspace(target.table, workspaceId)) {
      process.stdout.write("the local runtime's default workspace: forgotten\n");
    }
    const remains = await remainsOf(target, workspaceId);
    const left = Object.entries(remains).filter(([, n]) => n > 0);
    if (left.length > 0) {
      // Work in flight when the keys went (a queued message, a key a warm function still trusts)
      // can write after its step: running again removes it.
      process.stdout.write(
        `still stored: ${left.map(([place, n]) => `${place} ${n}`).join(", ")}; run again\n`,
      );
      return 1;
    }
    process.stdout.write(`nothing of ${workspaceId} is left\n`);
    return 0;
  } finally {
    await target.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
