import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { mkdir, open, readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";

/**
 * KMS for the local runtime: an endpoint that speaks the KMS JSON protocol for the two calls the
 * service makes (`GenerateDataKey`, `Decrypt`; lib/store/keys.ts), so the functions' code runs
 * unchanged, as the local SQS endpoint does for SQS (queues.ts). One symmetric key stands for
 * the stack's: a 256-bit master key kept in a file (created on first start, mode 0600) or, without
 * one, in memory for the life of the process. A data key is returned encrypted under it with
 * AES-256-GCM, bound to the request's encryption context exactly as KMS binds it: decrypting under
 * another context, or another master key, fails with KMS's `InvalidCiphertextException`.
 */

/** The local key, by the names a caller may give it (DATA_KEY_ID is the alias). */
export const LOCAL_KEY = {
  id: "kb-intel-local",
  alias: "alias/kb-intel-local",
  arn: (region: string) => `arn:aws:kms:${region}:000000000000:key/kb-intel-local`,
} as const;

/** Where a local runtime on `dataDir` keeps its master key (the runtime and the admin CLIs). */
export const localKeyFile = (dataDir: string) => join(dataDir, "kms", "master.key");

/** What starts every ciphertext blob this endpoint makes. */
const MAGIC = Buffer.from("KBL1");
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

type KmsError = [number, { __type: string; message: string }];
const fail = (type: string, message: string, status = 400): KmsError => [
  status,
  { __type: type, message },
];

/** Encryption context in one canonical form, bound into each ciphertext as GCM's additional data. */
const contextBytes = (context: unknown) =>
  Buffer.from(
    JSON.stringify(
      Object.entries((context ?? {}) as Record<string, string>).sort(([a], [b]) =>
        a < b ? -1 : a > b ? 1 : 0,
      ),
    ),
  );

export interface LocalKmsOptions {
  /** Where the master key is kept; in memory only when absent. */
  keyFile?: string;
  region?: string;
}

export class LocalKms {
  private server: Server | undefined;
  private master: Buffer | undefined;
  private readonly region: string;

  constructor(private readonly options: LocalKmsOptions = {}) {
    this.region = options.region ?? "us-east-1";
  }

  /** Loads (or creates) the master key and starts the endpoint; answers its URL. */
  async start(): Promise<string> {
    this.master = await this.masterKey();
    this.server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on("data", (part: Buffer) => parts.push(part));
      req.on("end", () => {
        const [status, body] = this.call(
          String(req.headers["x-amz-target"] ?? ""),
          Buffer.concat(parts).toString("utf8"),
        );
        res.writeHead(status, { "content-type": "application/x-amz-json-1.1" });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) =>
      this.server ? this.server.close(() => resolve()) : resolve(),
    );
    this.master?.fill(0);
  }

  /** The key file's 32 bytes, written on first start readable by its owner alone; or fresh ones. */
  private async masterKey(): Promise<Buffer> {
    const file = this.options.keyFile;
    if (!file) return randomBytes(KEY_BYTES);
    await mkdir(dirname(file), { recursive: true });
    try {
      const handle = await open(file, "wx", 0o600);
      try {
        const key = randomBytes(KEY_BYTES);
        await handle.writeFile(key);
        await handle.sync();
        return key;
      } finally {
        await handle.close();
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const key = await readFile(file);
    if (key.length !== KEY_BYTES) {
      throw new Error(
        `${file} is not a local KMS key (${KEY_BYTES} bytes); move it away to start afresh`,
      );
    }
    return key;
  }

  private known(keyId: unknown): boolean {
    return [LOCAL_KEY.id, LOCAL_KEY.alias, LOCAL_KEY.arn(this.region)].includes(String(keyId));
  }

  /** Answers one KMS request. */
  private call(target: string, raw: string): [number, unknown] {
    const action = target.replace(/^TrentService\./, "");
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return fail("ValidationException", "Malformed JSON");
    }
    if (action === "GenerateDataKey") return this.generateDataKey(input);
    if (action === "Decrypt") return this.decrypt(input);
    return fail("UnsupportedOperationException", `${action} is not supported locally`);
  }

  private generateDataKey(input: Record<string, unknown>): [number, unknown] {
    if (!this.known(input.KeyId)) return fail("NotFoundException", `Key ${input.KeyId} not found`);
    const bytes =
      input.KeySpec === "AES_128" ? 16 : input.KeySpec === "AES_256" ? 32 : input.NumberOfBytes;
    if (typeof bytes !== "number" || !Number.isInteger(bytes) || bytes < 1 || bytes > 1024) {
      return fail("ValidationException", "Give KeySpec (AES_128, AES_256) or NumberOfBytes");
    }
    const plaintext = randomBytes(bytes);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.master as Buffer, iv);
    cipher.setAAD(contextBytes(input.EncryptionContext));
    const sealed = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const blob = Buffer.concat([MAGIC, iv, cipher.getAuthTag(), sealed]);
    return [
      200,
      {
        CiphertextBlob: blob.toString("base64"),
        Plaintext: plaintext.toString("base64"),
        KeyId: LOCAL_KEY.arn(this.region),
      },
    ];
  }

  private decrypt(input: Record<string, unknown>): [number, unknown] {
    if (input.KeyId !== undefined && !this.known(input.KeyId)) {
      return fail("NotFoundException", `Key ${input.KeyId} not found`);
    }
    const blob = Buffer.from(String(input.CiphertextBlob ?? ""), "base64");
    const invalid = fail(
      "InvalidCiphertextException",
      "The ciphertext is invalid or its context differs",
    );
    if (blob.length <= MAGIC.length + IV_BYTES + TAG_BYTES || !blob.subarray(0, 4).equals(MAGIC)) {
      return invalid;
    }
    const iv = blob.subarray(4, 4 + IV_BYTES);
    const tag = blob.subarray(4 + IV_BYTES, 4 + IV_BYTES + TAG_BYTES);
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.master as Buffer, iv);
      decipher.setAAD(contextBytes(input.EncryptionContext));
      decipher.setAuthTag(tag);
      const plaintext = Buffer.concat([
        decipher.update(blob.subarray(4 + IV_BYTES + TAG_BYTES)),
        decipher.final(),
      ]);
      return [
        200,
        {
          KeyId: LOCAL_KEY.arn(this.region),
          Plaintext: plaintext.toString("base64"),
          EncryptionAlgorithm: "SYMMETRIC_DEFAULT",
        },
      ];
    } catch {
      return invalid;
    }
  }
}
