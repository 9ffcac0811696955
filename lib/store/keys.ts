import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { DecryptCommand, GenerateDataKeyCommand, type KMSClient } from "@aws-sdk/client-kms";
import { LRUCache } from "lru-cache";

/**
 * Envelope encryption under the service's KMS key, for secrets the service must read back (a
 * webhook endpoint's signing secret): each secret is encrypted here with AES-256-GCM under a data
 * key of its own, which KMS generates (`GenerateDataKey`) and alone can decrypt (`Decrypt`). The
 * table stores the sealed secret: the data key as KMS encrypted it, the nonce, the tag and the
 * ciphertext. Decrypted data keys are kept briefly in memory, so a warm function delivering to
 * one endpoint asks KMS once per `cacheSeconds`. This is the only code that speaks KMS; the local
 * runtime answers the same two calls (infra/local/keys.ts).
 */

/** A secret as stored: every part base64. */
export interface SealedSecret {
  /** The data key, encrypted by KMS under the service's key. */
  key: string;
  /** AES-256-GCM's 96-bit nonce. */
  iv: string;
  /** AES-256-GCM's authentication tag. */
  tag: string;
  /** The encrypted secret. */
  data: string;
}

/**
 * What a sealed secret is bound to (which endpoint of which workspace): KMS's encryption context
 * for its data key, and GCM's additional data. Opening it under other values fails, so a sealed
 * secret copied onto another item is of no use.
 */
export type SecretContext = Record<string, string>;

/** Seals and opens secrets; `DataKeys` is the implementation, under the service's KMS key. */
export interface SecretBox {
  seal(secret: string, context: SecretContext): Promise<SealedSecret>;
  open(sealed: SealedSecret, context: SecretContext): Promise<string>;
}

/** Does a stored value have the shape of a sealed secret? */
export const isSealed = (value: unknown): value is SealedSecret =>
  typeof value === "object" &&
  value !== null &&
  ["key", "iv", "tag", "data"].every(
    (part) => typeof (value as Record<string, unknown>)[part] === "string",
  );

/** The context in one canonical form: GCM's additional data, and the cache's key. */
const canonical = (context: SecretContext) =>
  JSON.stringify(Object.entries(context).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

const ALGORITHM = "aes-256-gcm";

export class DataKeys implements SecretBox {
  /** Plaintext data keys by their encrypted form and context; zeroed when they leave. */
  private readonly plaintextKeys: LRUCache<string, Buffer> | undefined;

  constructor(
    private readonly kms: KMSClient,
    /** The KMS key's id, ARN or alias. */
    private readonly keyId: string,
    /** How long a decrypted data key stays in memory (0: not at all). */
    cacheSeconds = 300,
  ) {
    this.plaintextKeys =
      cacheSeconds > 0
        ? new LRUCache<string, Buffer>({
            max: 1000,
            ttl: cacheSeconds * 1000,
            dispose: (key) => key.fill(0),
          })
        : undefined;
  }

  async seal(secret: string, context: SecretContext): Promise<SealedSecret> {
    const generated = await this.kms.send(
      new GenerateDataKeyCommand({
        KeyId: this.keyId,
        KeySpec: "AES_256",
        EncryptionContext: context,
      }),
    );
    if (!generated.Plaintext || !generated.CiphertextBlob) {
      throw new Error("KMS answered GenerateDataKey without a key");
    }
    const key = Buffer.from(generated.Plaintext);
    try {
      const iv = randomBytes(12);
      const cipher = createCipheriv(ALGORITHM, key, iv);
      cipher.setAAD(Buffer.from(canonical(context)));
      const data = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
      return {
        key: Buffer.from(generated.CiphertextBlob).toString("base64"),
        iv: iv.toString("base64"),
        tag: cipher.getAuthTag().toString("base64"),
        data: data.toString("base64"),
      };
    } finally {
      key.fill(0);
      generated.Plaintext.fill(0);
    }
  }

  async open(sealed: SealedSecret, context: SecretContext): Promise<string> {
    const key = await this.dataKey(sealed.key, context);
    try {
      const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(sealed.iv, "base64"));
      decipher.setAAD(Buffer.from(canonical(context)));
      decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
      return Buffer.concat([
        decipher.update(Buffer.from(sealed.data, "base64")),
        decipher.final(),
      ]).toString("utf8");
    } finally {
      key.fill(0);
    }
  }

  /** A copy of the plaintext of an encrypted data key (the caller zeroes it): from memory, or KMS. */
  private async dataKey(encrypted: string, context: SecretContext): Promise<Buffer> {
    const cacheKey = `${encrypted}\n${canonical(context)}`;
    const cached = this.plaintextKeys?.get(cacheKey);
    if (cached) return Buffer.from(cached);
    const decrypted = await this.kms.send(
      new DecryptCommand({
        KeyId: this.keyId,
        CiphertextBlob: Buffer.from(encrypted, "base64"),
        EncryptionContext: context,
      }),
    );
    if (!decrypted.Plaintext) throw new Error("KMS answered Decrypt without a key");
    const key = Buffer.from(decrypted.Plaintext);
    decrypted.Plaintext.fill(0);
    this.plaintextKeys?.set(cacheKey, Buffer.from(key));
    return key;
  }
}
