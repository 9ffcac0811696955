import { createPresignedPost } from "@aws-sdk/s3-presigned-post";
import type { Blobs } from "./blobs.js";

/**
 * Presigned POSTs of the service's bucket, apart from `Blobs` because only the function that
 * hands out upload forms (knowledge-api) needs them: their SDK package is about 75 KiB of every
 * bundle that imports it.
 */

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

/** A presigned POST that stores what `policy` allows at `key` of the bucket of `blobs`. */
export function presignPost(
  blobs: Blobs,
  key: string,
  { bytes, contentType, expiresInSeconds }: PostPolicy,
): Promise<PresignedPost> {
  return createPresignedPost(blobs.s3, {
    Bucket: blobs.bucket,
    Key: key,
    Conditions: [["content-length-range", bytes, bytes]],
    Fields: { "Content-Type": contentType },
    Expires: expiresInSeconds,
  });
}
