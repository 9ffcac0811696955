import {
  CopyObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { createPresignedPost } from "@aws-sdk/s3-presigned-post";

/** What identifies one stored version of an object: a reader that must see that version checks it. */
export interface StoredObject {
  /** As S3 answers it, quotes included. */
  etag: string;
  bytes: number;
  contentType?: string | undefined;
  /** Only in a versioned bucket. */
  versionId?: string | undefined;
}

/** A stored object opened for reading: its identity now, its body read or let go on demand. */
export interface OpenedObject extends StoredObject {
  read(): Promise<Uint8Array>;
  /** Lets the body go unread. */
  discard(): Promise<void>;
}

/** What a presigned POST accepts: exactly `bytes` bytes of `contentType`, for a while. */
export interface PostPolicy {
  bytes: number;
  contentType: string;
  expiresInSeconds: number;
}

/** A browser form upload of one object: where to POST, and the signed fields to send first. */
export interface PresignedPost {
  url: string;
  fields: Record<string, string>;
}

const isMissing = (err: unknown) =>
  err instanceof NoSuchKey ||
  err instanceof NotFound ||
  (err as { name?: string }).name === "NotFound";

/**
 * Objects of the service's one bucket. Every key names its workspace: `ws/{workspaceId}/`, or
 * `uploads/ws/{workspaceId}/` for presigned uploads not yet checked.
 */
export class Blobs {
  constructor(
    readonly s3: S3Client,
    readonly bucket: string,
  ) {}

  async put(key: string, body: string | Uint8Array, contentType: string): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }),
    );
  }

  async putJson(key: string, value: unknown): Promise<void> {
    await this.put(key, JSON.stringify(value), "application/json");
  }

  /** The object's bytes, or undefined when there is no such object. */
  async get(key: string): Promise<Uint8Array | undefined> {
    const object = await this.open(key);
    return typeof object === "string" ? undefined : object.read();
  }

  async getText(key: string): Promise<string | undefined> {
    const bytes = await this.get(key);
    return bytes && new TextDecoder().decode(bytes);
  }

  async getJson<T>(key: string): Promise<T | undefined> {
    const text = await this.getText(key);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  }

  /**
   * Opens an object, only in the version `expected` names when given (by ETag, and version in a
   * versioned bucket): "changed" when the object is there in another version.
   */
  async open(
    key: string,
    expected?: Pick<StoredObject, "etag" | "versionId">,
  ): Promise<OpenedObject | "missing" | "changed"> {
    const res = await this.s3
      .send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          IfMatch: expected?.etag,
          VersionId: expected?.versionId,
        }),
      )
      .catch((err: unknown) => {
        if (err instanceof NoSuchKey) return "missing" as const;
        if ((err as { name?: string }).name === "PreconditionFailed") return "changed" as const;
        throw err;
      });
    if (typeof res === "string") return res;
    const body = res.Body;
    if (!body) return "missing";
    return {
      etag: res.ETag ?? "",
      bytes: res.ContentLength ?? 0,
      contentType: res.ContentType,
      versionId: res.VersionId,
      read: () => body.transformToByteArray(),
      discard: () => body.transformToWebStream().cancel(),
    };
  }

  /** A presigned POST that stores what `policy` allows at `key`. */
  async presignPost(
    key: string,
    { bytes, contentType, expiresInSeconds }: PostPolicy,
  ): Promise<PresignedPost> {
    return createPresignedPost(this.s3, {
      Bucket: this.bucket,
      Key: key,
      Conditions: [["content-length-range", bytes, bytes]],
      Fields: { "Content-Type": contentType },
      Expires: expiresInSeconds,
    });
  }

  /** The object's identity and type, or undefined when there is no such object. */
  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const res = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return {
        etag: res.ETag ?? "",
        bytes: res.ContentLength ?? 0,
        contentType: res.ContentType,
        versionId: res.VersionId,
      };
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.head(key)) !== undefined;
  }

  /** Copies an object, its content type included, to another key; false when there is none. */
  async copy(from: string, to: string): Promise<boolean> {
    try {
      await this.s3.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: to,
          CopySource: encodeURI(`${this.bucket}/${from}`),
        }),
      );
      return true;
    } catch (err) {
      if (isMissing(err)) return false;
      throw err;
    }
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const res = await this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const obj of res.Contents ?? []) if (obj.Key) keys.push(obj.Key);
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return keys;
  }

  async delete(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      await this.s3.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
    }
  }

  async deletePrefix(prefix: string): Promise<void> {
    await this.delete(await this.list(prefix));
  }
}
