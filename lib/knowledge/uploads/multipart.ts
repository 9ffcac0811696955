import { newId } from "../../ids.js";
import type { Blobs } from "../../store/blobs.js";
import type { SourceItem, SourceSettings, Sources } from "../sources/sources.js";
import { acceptFile, storedFileKey } from "./files.js";

/**
 * Largest file accepted in a multipart body (4 MiB). Through API Gateway a binary body reaches
 * Lambda base64-encoded (4/3 larger) inside the invocation payload, which is limited to 6 MB for
 * synchronous calls (API Gateway itself takes 10 MB): 6 MB * 3/4 = 4.5 MB, less the multipart
 * framing and the rest of the event, leaves 4 MiB of file. Larger files use the presigned upload.
 */
export const MULTIPART_MAX_BYTES = 4 * 1024 * 1024;

const PRESIGNED_HINT = {
  message: "upload larger files with POST /api/knowledge/uploads",
  details: { presignedUpload: "POST /api/knowledge/uploads" },
};

/** The `file` part of a multipart body as `c.req.parseBody()` gives it. */
export interface UploadedFile {
  name: string;
  type: string;
  size: number;
  arrayBuffer(): Promise<ArrayBuffer>;
}

export interface MultipartDeps {
  sources: Sources;
  blobs: Blobs;
}

/**
 * Stores a file from a multipart body and creates its `file` source, which is queued for
 * indexing. Throws 400 (no name, empty), 413 (over `maxBytes`, pointing to the presigned flow)
 * or 415 (unsupported type) before anything is stored.
 */
export async function createFileSource(
  { sources, blobs }: MultipartDeps,
  workspaceId: string,
  file: UploadedFile,
  options: {
    name?: string | undefined;
    maxBytes?: number;
    /** Runs once the file is accepted, before anything is stored (a quota). */
    reserve?: (bytes: number) => Promise<unknown>;
    /** The new source's attributes and chunking. */
    settings?: SourceSettings;
  } = {},
): Promise<{ source: SourceItem; bytes: number }> {
  const maxBytes = options.maxBytes ?? MULTIPART_MAX_BYTES;
  const accepted = acceptFile(
    { filename: file.name, contentType: file.type, bytes: file.size },
    maxBytes,
    PRESIGNED_HINT,
    { name: "file", bytes: "file" },
  );
  await options.reserve?.(file.size);
  const id = newId("source");
  const key = storedFileKey(workspaceId, id);
  await blobs.put(key, new Uint8Array(await file.arrayBuffer()), accepted.contentType);
  try {
    const source = await sources.create(workspaceId, {
      id,
      type: "file",
      name: options.name?.trim() || accepted.filename,
      source_url_or_path: accepted.filename,
      content_key: key,
      ...options.settings,
    });
    return { source, bytes: file.size };
  } catch (err) {
    // No record (a failed write): drop the object. A record whose queueing failed keeps it for reindex.
    if (!(await sources.get(workspaceId, id).catch(() => undefined))) await blobs.delete([key]);
    throw err;
  }
}
