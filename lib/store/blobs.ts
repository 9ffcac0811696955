import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";

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

const isMissing = (err: unknown) =>
  err instanceof NoSuchKey ||
  err instanceof NotFound ||
  (err as { name?: string }).name === "NotFound";

/** A part of a multipart upload, as completing the upload names it. */
export interface UploadedPart {
  partNumber: number;
  etag: string;
}

/**
 * A store that does not keep versions or list unfinished uploads answers these (the S3 emulator);
 * S3 itself implements both.
 */
const unsupported = (err: unknown) =>
  ["NotImplemented", "MethodNotAllowed"].includes((err as { name?: string }).name ?? "");

/** One object version or delete marker to remove, by key and version id. */
type VersionKey = { Key: string; VersionId?: string | undefined };

/**
 * Objects of the service's one bucket. Every key names its workspace: `ws/{workspaceId}/`, or
 * `uploads/ws/{workspaceId}/` for presigned uploads not yet checked.
 */
export class Blobs {
  constructor(
    readonly s3: S3Client,
    readonly bucket: string,
  ) {}

  /** `tags` are the object's S3 tags, which the bucket's lifecycle rules can expire it by. */
  async put(
    key: string,
    body: string | Uint8Array,
    contentType: string,
    tags?: Record<string, string>,
  ): Promise<void> {
    await this.s3.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: body,
        ContentType: contentType,
        ...(tags ? { Tagging: new URLSearchParams(tags).toString() } : {}),
      }),
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

  /** A URL that downloads the object for `expiresInSeconds`, as an attachment named `fileName`. */
  presignGet(key: string, expiresInSeconds: number, fileName: string): Promise<string> {
    return getSignedUrl(
      this.s3,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ResponseContentDisposition: `attachment; filename="${fileName.replace(/["\\]/g, "")}"`,
      }),
      { expiresIn: expiresInSeconds },
    );
  }

  /**
   * Starts an object written in parts (`uploadPart`, then `completeUpload`); answers the upload's
   * id. Every part but the last must hold at least 5 MiB on S3. Parts of an upload never completed
   * are removed by the bucket's lifecycle (`incomplete-multipart`) or `purge`.
   */
  async startUpload(key: string, contentType: string): Promise<string> {
    const res = await this.s3.send(
      new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: contentType }),
    );
    if (!res.UploadId) throw new Error(`No upload id for ${key}`);
    return res.UploadId;
  }

  /** Writes one part (numbered from 1; writing a number again replaces it); answers its ETag. */
  async uploadPart(
    key: string,
    uploadId: string,
    partNumber: number,
    body: Uint8Array,
  ): Promise<string> {
    const res = await this.s3.send(
      new UploadPartCommand({
        Bucket: this.bucket,
        Key: key,
        UploadId: uploadId,
        PartNumber: partNumber,
        Body: body,
      }),
    );
    return res.ETag ?? "";
  }

  /** Makes the object of its parts, in order. */
  async completeUpload(key: string, uploadId: string, parts: UploadedPart[]): Promise<void> {
    await this.s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: this.bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: {
          Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag })),
        },
      }),
    );
  }

  /**
   * Removes everything stored under a prefix for good: every object, and in a versioned bucket
   * every older version and delete marker too (a plain delete there only hides an object behind a
   * marker, its data kept until the lifecycle expires it), and the parts of unfinished uploads.
   * Answers how many objects, versions and uploads it removed. In a store without versions (the
   * emulator) it deletes the objects.
   */
  async purge(prefix: string): Promise<number> {
    const versions = await this.versionsUnder(prefix);
    const removed = versions ?? (await this.list(prefix)).map((Key): VersionKey => ({ Key }));
    for (let i = 0; i < removed.length; i += 1000) {
      await this.s3.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: removed.slice(i, i + 1000), Quiet: true },
        }),
      );
    }
    return removed.length + (await this.abortUploads(prefix));
  }

  /**
   * How many objects (and older versions and unfinished uploads, where the store keeps them)
   * there are under a prefix.
   */
  async countUnder(prefix: string): Promise<number> {
    const versions = await this.versionsUnder(prefix);
    const objects = versions ? versions.length : (await this.list(prefix)).length;
    return objects + (await this.uploadsUnder(prefix)).length;
  }

  /** Every version and delete marker under a prefix, or undefined where the store keeps none. */
  private async versionsUnder(prefix: string): Promise<VersionKey[] | undefined> {
    const found: VersionKey[] = [];
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    try {
      do {
        const res = await this.s3.send(
          new ListObjectVersionsCommand({
            Bucket: this.bucket,
            Prefix: prefix,
            KeyMarker: keyMarker,
            VersionIdMarker: versionMarker,
          }),
        );
        for (const v of [...(res.Versions ?? []), ...(res.DeleteMarkers ?? [])]) {
          if (v.Key) found.push({ Key: v.Key, VersionId: v.VersionId });
        }
        keyMarker = res.IsTruncated ? res.NextKeyMarker : undefined;
        versionMarker = res.IsTruncated ? res.NextVersionIdMarker : undefined;
      } while (keyMarker);
    } catch (err) {
      if (unsupported(err)) return undefined;
      throw err;
    }
    return found;
  }

  /** The unfinished multipart uploads under a prefix (none where the store cannot list them). */
  private async uploadsUnder(prefix: string): Promise<Array<{ key: string; uploadId: string }>> {
    const found: Array<{ key: string; uploadId: string }> = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    try {
      do {
        const res = await this.s3.send(
          new ListMultipartUploadsCommand({
            Bucket: this.bucket,
            Prefix: prefix,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
          }),
        );
        for (const u of res.Uploads ?? []) {
          if (u.Key && u.UploadId) found.push({ key: u.Key, uploadId: u.UploadId });
        }
        keyMarker = res.IsTruncated ? res.NextKeyMarker : undefined;
        uploadIdMarker = res.IsTruncated ? res.NextUploadIdMarker : undefined;
      } while (keyMarker);
    } catch (err) {
      if (unsupported(err)) return [];
      throw err;
    }
    return found;
  }

  private async abortUploads(prefix: string): Promise<number> {
    const uploads = await this.uploadsUnder(prefix);
    for (const { key, uploadId } of uploads) {
      await this.s3
        .send(
          new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }),
        )
        .catch((err: unknown) => {
          // Finished or aborted since it was listed: nothing is left of it either way.
          if ((err as { name?: string }).name !== "NoSuchUpload") throw err;
        });
    }
    return uploads.length;
  }
}
