import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DecryptCommand,
  GenerateDataKeyCommand,
  InvalidCiphertextException,
  KMSClient,
  NotFoundException,
} from "@aws-sdk/client-kms";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCAL_KEY, LocalKms, localKeyFile } from "../../../infra/local/keys.js";
import { startLocal } from "../../../infra/local/runtime.js";
import { loadConfig } from "../../../lib/config.js";
import { newId } from "../../../lib/ids.js";
import { createStores } from "../../../lib/store/clients.js";
import { DataKeys, isSealed, type SealedSecret } from "../../../lib/store/keys.js";
import { wsKey } from "../../../lib/store/table.js";

/**
 * Envelope encryption (lib/store/keys.ts) through the AWS SDK's KMS client against the local
 * runtime's KMS endpoint, which answers GenerateDataKey and Decrypt as KMS does.
 */

const client = (endpoint: string) =>
  new KMSClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });

/** A KMS client that counts the requests it sends, by command. */
function counting(endpoint: string) {
  const kms = client(endpoint);
  const sent: string[] = [];
  const send = kms.send.bind(kms);
  kms.send = ((command: { constructor: { name: string } }, ...rest: unknown[]) => {
    sent.push(command.constructor.name.replace(/Command$/, ""));
    return (send as (...args: unknown[]) => unknown)(command, ...rest);
  }) as typeof kms.send;
  return { kms, sent };
}

const context = { purpose: "webhook-signing-secret", workspaceId: "ws_1", endpointId: "wh_1" };
let dir: string;
let kms: LocalKms;
let endpoint: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "local-kms-"));
  kms = new LocalKms({ keyFile: join(dir, "kms", "master.key") });
  endpoint = await kms.start();
});
afterAll(async () => {
  await kms.close();
  await rm(dir, { recursive: true, force: true });
});

describe("the local KMS", () => {
  it("generates a data key that only Decrypt with the same context gives back", async () => {
    const kmsClient = client(endpoint);
    const generated = await kmsClient.send(
      new GenerateDataKeyCommand({
        KeyId: LOCAL_KEY.alias,
        KeySpec: "AES_256",
        EncryptionContext: context,
      }),
    );
    expect(generated.Plaintext).toHaveLength(32);
    expect(generated.KeyId).toBe(LOCAL_KEY.arn("us-east-1"));
    const blob = generated.CiphertextBlob as Uint8Array;
    expect(Buffer.from(blob).includes(Buffer.from(generated.Plaintext as Uint8Array))).toBe(false);
    const decrypted = await kmsClient.send(
      new DecryptCommand({ CiphertextBlob: blob, EncryptionContext: context }),
    );
    expect(Buffer.from(decrypted.Plaintext as Uint8Array)).toEqual(
      Buffer.from(generated.Plaintext as Uint8Array),
    );
    await expect(
      kmsClient.send(
        new DecryptCommand({
          CiphertextBlob: blob,
          EncryptionContext: { ...context, endpointId: "wh_2" },
        }),
      ),
    ).rejects.toBeInstanceOf(InvalidCiphertextException);
    await expect(
      kmsClient.send(new GenerateDataKeyCommand({ KeyId: "alias/another", KeySpec: "AES_256" })),
    ).rejects.toBeInstanceOf(NotFoundException);
  });

  it("keeps its master key in a file readable by its owner alone, and uses it again after a restart", async () => {
    const file = join(dir, "kms", "master.key");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const key = await readFile(file);
    expect(key).toHaveLength(32);
    const sealed = await new DataKeys(client(endpoint), LOCAL_KEY.alias).seal("whsec_x", context);

    const again = new LocalKms({ keyFile: file });
    const elsewhere = new LocalKms();
    try {
      const opened = await new DataKeys(client(await again.start()), LOCAL_KEY.alias).open(
        sealed,
        context,
      );
      expect(opened).toBe("whsec_x");
      expect(await readFile(file)).toEqual(key);
      // Another runtime without the file has a key of its own, in memory: it cannot open it.
      const stranger = new DataKeys(client(await elsewhere.start()), LOCAL_KEY.alias);
      await expect(stranger.open(sealed, context)).rejects.toBeInstanceOf(
        InvalidCiphertextException,
      );
    } finally {
      await again.close();
      await elsewhere.close();
    }
  });
});

describe("sealed secrets", () => {
  it("store no part of the secret or its key in clear, and open only for the context they were sealed for", async () => {
    const keys = new DataKeys(client(endpoint), LOCAL_KEY.alias);
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const sealed = await keys.seal(secret, context);
    expect(JSON.stringify(sealed)).not.toContain("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    expect(Buffer.from(sealed.data, "base64").toString("utf8")).not.toContain("MfKQ9r8");
    expect(await keys.open(sealed, context)).toBe(secret);
    // The same secret sealed twice: two data keys, two nonces.
    const twice = await keys.seal(secret, context);
    expect(twice.key).not.toBe(sealed.key);
    expect(twice.iv).not.toBe(sealed.iv);

    // Moved to another endpoint, or tampered with, it does not open.
    const fresh = new DataKeys(client(endpoint), LOCAL_KEY.alias);
    await expect(fresh.open(sealed, { ...context, endpointId: "wh_other" })).rejects.toThrow();
    const flipped = Buffer.from(sealed.data, "base64");
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    const tampered: SealedSecret = { ...sealed, data: flipped.toString("base64") };
    await expect(keys.open(tampered, context)).rejects.toThrow();
  });

  it("ask KMS for one data key per secret, and decrypt it once while it stays in memory", async () => {
    const cached = counting(endpoint);
    const keys = new DataKeys(cached.kms, LOCAL_KEY.alias, 300);
    const sealed = await keys.seal("whsec_a", context);
    for (let i = 0; i < 3; i++) expect(await keys.open(sealed, context)).toBe("whsec_a");
    expect(cached.sent).toEqual(["GenerateDataKey", "Decrypt"]);

    const uncached = counting(endpoint);
    const every = new DataKeys(uncached.kms, LOCAL_KEY.alias, 0);
    for (let i = 0; i < 3; i++) expect(await every.open(sealed, context)).toBe("whsec_a");
    expect(uncached.sent).toEqual(["Decrypt", "Decrypt", "Decrypt"]);
  });
});

describe("a local runtime's data directory", () => {
  it("keeps the runtime's key across restarts, and migrate-index seals the secrets kept in plain text", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "kb-kms-"));
    const start = () => startLocal({ port: 0, host: "127.0.0.1", dataDir, retryDelayMs: 5 });
    const id = newId("webhook");
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    try {
      let runtime = await start();
      const workspaceId = runtime.workspaceId;
      const key = { pk: wsKey(workspaceId), sk: `WEBHOOK#${id}` };
      // An endpoint as the service stored it before secrets were sealed.
      await createStores(loadConfig()).table.put({
        ...key,
        workspaceId,
        id,
        url: "https://hooks.example.com/kb",
        events: ["source.indexed"],
        description: null,
        secret,
        createdAt: new Date().toISOString(),
      });
      await runtime.close();
      expect((await stat(localKeyFile(dataDir))).mode & 0o777).toBe(0o600);

      const migrated = await new Promise<string>((resolve, reject) =>
        execFile(
          "node_modules/.bin/tsx",
          ["infra/admin/migrate-index-cli.ts"],
          {
            env: { ...process.env, DATA_DIR: dataDir, TABLE_NAME: "", BUCKET_NAME: "" },
            encoding: "utf8",
          },
          (error, stdout, stderr) => (error ? reject(new Error(stderr)) : resolve(stdout)),
        ),
      );
      expect(migrated).toContain(`${workspaceId}: `);
      expect(migrated).toContain("1 webhook secrets sealed");

      runtime = await start();
      try {
        const stored = await createStores(loadConfig()).table.get(key.pk, key.sk);
        expect(stored).not.toHaveProperty("secret");
        expect(isSealed(stored?.sealedSecret)).toBe(true);
        // The restarted runtime's KMS opens what the command sealed: one key, kept in DATA_DIR.
        const keys = new DataKeys(client(process.env.AWS_ENDPOINT_URL_KMS ?? ""), LOCAL_KEY.alias);
        const opened = await keys.open(stored?.sealedSecret as SealedSecret, {
          purpose: "webhook-signing-secret",
          workspaceId,
          endpointId: id,
        });
        expect(opened).toBe(secret);
      } finally {
        await runtime.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
