import { join } from "node:path";
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { KeyStore } from "../../lib/auth/keys.js";
import { Table } from "../../lib/store/table.js";
import { ensureTable, startDynamo } from "../local/emulators.js";
import { runningRuntime, TABLE_NAME } from "../local/runtime.js";

// The Lambdas run Node 22; locally Node 20 is supported, so the SDK's upgrade notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const usage = `Manage workspaces and API keys.

  npm run keys -- create [--workspace ws_...] [--name "Acme"] [--label ci]
      New key (and a new workspace unless --workspace is given); the key is printed once.
  npm run keys -- list
      Workspaces and their keys (prefixes only; keys are stored hashed).
  npm run keys -- revoke key_...
      Revokes a key; requests with it get 401 within KEY_CACHE_SECONDS.

With TABLE_NAME set, works on that DynamoDB table (AWS credentials and region from the
environment). Otherwise on the local runtime's data in DATA_DIR (default ./.data).`;

/** The configured table: AWS when TABLE_NAME is set, else the local runtime's (running or not). */
async function openTable(): Promise<{ table: Table; close(): Promise<void> }> {
  const doc = (client: DynamoDBClient) =>
    DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  if (process.env.TABLE_NAME) {
    return {
      table: new Table(doc(new DynamoDBClient({})), process.env.TABLE_NAME),
      close: async () => {},
    };
  }
  const dataDir = process.env.DATA_DIR ?? "./.data";
  const local = {
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  };
  const running = await runningRuntime(dataDir);
  if (running) {
    const client = new DynamoDBClient({ ...local, endpoint: running.dynamoEndpoint });
    return { table: new Table(doc(client), running.tableName), close: async () => {} };
  }
  const dynamo = await startDynamo(join(dataDir, "dynamodb"));
  const client = new DynamoDBClient({ ...local, endpoint: dynamo.endpoint });
  await ensureTable(client, TABLE_NAME);
  return { table: new Table(doc(client), TABLE_NAME), close: () => dynamo.close() };
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      workspace: { type: "string" },
      name: { type: "string" },
      label: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, arg] = positionals;
  if (values.help || !command || !["create", "list", "revoke"].includes(command)) {
    process.stdout.write(`${usage}\n`);
    return values.help ? 0 : 2;
  }
  const { table, close } = await openTable();
  const keys = new KeyStore(table, 0);
  try {
    if (command === "create") {
      let workspaceId = values.workspace;
      if (workspaceId && !(await keys.getWorkspace(workspaceId))) {
        process.stderr.write(`No workspace ${workspaceId}\n`);
        return 1;
      }
      workspaceId ??= (await keys.createWorkspace(values.name ?? "Workspace")).id;
      const { key, info } = await keys.createKey(workspaceId, values.label ?? "cli");
      process.stdout.write(`workspace ${workspaceId}\nkey id    ${info.keyId}\nkey       ${key}\n`);
      process.stdout.write("The key is shown once; only its hash is stored.\n");
    } else if (command === "list") {
      const [workspaces, all] = await Promise.all([keys.listWorkspaces(), keys.listKeys()]);
      for (const ws of workspaces) {
        process.stdout.write(`${ws.id}  ${ws.name}  (created ${ws.createdAt})\n`);
        for (const k of all.filter((k) => k.workspaceId === ws.id)) {
          const state = k.revokedAt ? `revoked ${k.revokedAt}` : "active";
          process.stdout.write(`  ${k.keyId}  ${k.prefix}...  ${k.label}  ${state}\n`);
        }
      }
    } else {
      if (!arg) {
        process.stderr.write("revoke needs a key id (key_...)\n");
        return 2;
      }
      if (!(await keys.revokeKey(arg))) {
        process.stderr.write(`No key ${arg}\n`);
        return 1;
      }
      process.stdout.write(`revoked ${arg}\n`);
    }
    return 0;
  } finally {
    await close();
  }
}

process.exitCode = await main(process.argv.slice(2));
