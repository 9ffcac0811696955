import { join, resolve } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { KMSClient } from "@aws-sdk/client-kms";
import { S3Client } from "@aws-sdk/client-s3";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { KeyStore } from "../../lib/auth/keys.js";
import { migrateWorkspace } from "../../lib/knowledge/indexing/migrate-index.js";
import type { EmbeddingSpace } from "../../lib/llm/embeddings.js";
import { loadLlmSettings } from "../../lib/llm/settings.js";
import { DynamoWriterLock, SearchIndex, type SearchLocation } from "../../lib/search/index.js";
import { Blobs } from "../../lib/store/blobs.js";
import { DataKeys } from "../../lib/store/keys.js";
import { Table } from "../../lib/store/table.js";
import { WebhookEndpoints } from "../../lib/webhooks/endpoints.js";
import { ensureTable, startDynamo, startS3 } from "../local/emulators.js";
import { LOCAL_KEY, LocalKms, localKeyFile } from "../local/keys.js";
import { BUCKET_NAME, runningRuntime, TABLE_NAME } from "../local/runtime.js";

// The Lambdas run Node 22; locally Node 20 is supported, so the SDK's upgrade notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const usage = `Write every workspace's indexed sources into the persisted search index, give URL
sources that predate one source per URL the claim of their URL, and seal the webhook signing
secrets stored in plain text under the KMS key.

  npm run migrate-index

For a deployment that searched in memory before the index existed: it reads the stored chunk
sets (and vectors of EMBEDDING_MODEL, when set) and writes them to the index. Safe to run twice
and while the service runs. With TABLE_NAME and BUCKET_NAME set, works on AWS (credentials and
region from the environment; SEARCH_INDEX_URI as the functions have it, default
s3://<bucket>/search; DATA_KEY_ID the stack's KMS key, alias/kb-intel-<stage>-data, or the
secrets are left as they are). Otherwise on the local data in DATA_DIR (default ./.data), with
npm start stopped.`;

interface Target {
  table: Table;
  blobs: Blobs;
  location: SearchLocation;
  /** The KMS key webhook secrets are sealed under; absent, they are left as they are. */
  dataKeys: DataKeys | undefined;
  close(): Promise<void>;
}

async function openTarget(): Promise<Target | string> {
  const doc = (client: DynamoDBClient) =>
    DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const {
    TABLE_NAME: table,
    BUCKET_NAME: bucket,
    SEARCH_INDEX_URI: uri,
    DATA_KEY_ID,
  } = process.env;
  if (table && bucket) {
    return {
      table: new Table(doc(new DynamoDBClient({})), table),
      blobs: new Blobs(new S3Client({}), bucket),
      location: { uri: uri ?? `s3://${bucket}/search` },
      dataKeys: DATA_KEY_ID ? new DataKeys(new KMSClient({}), DATA_KEY_ID, 0) : undefined,
      close: async () => {},
    };
  }
  const dataDir = process.env.DATA_DIR ?? "./.data";
  if (await runningRuntime(dataDir)) return `Stop npm start on ${dataDir} first`;
  const local = {
    region: "us-east-1",
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  };
  const kms = new LocalKms({ keyFile: localKeyFile(dataDir) });
  const [dynamo, s3, kmsEndpoint] = await Promise.all([
    startDynamo(join(dataDir, "dynamodb")),
    startS3(join(dataDir, "s3"), [BUCKET_NAME]),
    kms.start(),
  ]);
  const client = new DynamoDBClient({ ...local, endpoint: dynamo.endpoint });
  await ensureTable(client, TABLE_NAME);
  return {
    table: new Table(doc(client), TABLE_NAME),
    blobs: new Blobs(
      new S3Client({ ...local, endpoint: s3.endpoint, forcePathStyle: true }),
      BUCKET_NAME,
    ),
    location: { uri: resolve(dataDir, "search") },
    dataKeys: new DataKeys(new KMSClient({ ...local, endpoint: kmsEndpoint }), LOCAL_KEY.alias, 0),
    close: async () => {
      await Promise.all([dynamo.close(), s3.close(), kms.close()]);
    },
  };
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const target = await openTarget();
  if (typeof target === "string") {
    process.stderr.write(`${target}\n`);
    return 1;
  }
  const llm = loadLlmSettings();
  const space: EmbeddingSpace | undefined = llm.embeddingModel
    ? { model: llm.embeddingModel, dimensions: llm.embeddingDimensions }
    : undefined;
  const search = new SearchIndex({
    location: target.location,
    lock: new DynamoWriterLock(target.table),
  });
  try {
    for (const workspace of await new KeyStore(target.table, 0).listWorkspaces()) {
      const report = await migrateWorkspace({ ...target, search, space }, workspace.id);
      const copies = report.duplicates.length
        ? `; copies of older URL sources, to delete: ${report.duplicates.join(", ")}`
        : "";
      const sealed = target.dataKeys
        ? await new WebhookEndpoints(target.table, target.dataKeys).sealPlaintextSecrets(
            workspace.id,
          )
        : undefined;
      const secrets =
        sealed === undefined
          ? "webhook secrets not sealed (no DATA_KEY_ID)"
          : `${sealed} webhook secrets sealed`;
      process.stdout.write(
        `${workspace.id}: ${report.sources} sources, ${report.chunks} chunks, ${report.vectors} vectors; ${report.urlsClaimed} URL sources claimed${copies}; ${secrets}\n`,
      );
    }
    if (!target.dataKeys) {
      process.stderr.write(
        "Webhook secrets stored in plain text were left as they are: set DATA_KEY_ID to the stack's KMS key (alias/kb-intel-<stage>-data) and run again.\n",
      );
    }
    return 0;
  } finally {
    await target.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
