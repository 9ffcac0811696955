import { toDisplayText } from "../../display-text.js";
import { DomainError, invalid } from "../../errors.js";
import { megabytes } from "../../files/limits.js";
import {
  ACCEPTED_CONTENT_TYPES,
  ACCEPTED_EXTENSIONS,
  declaredType,
  type FileKind,
} from "../../files/types.js";
import { sourceBlobPrefix } from "../sources/sources.js";

/** Where presigned uploads land until they are checked: the bucket expires what is left there. */
export const UPLOADS_PREFIX = "uploads/";

/**
 * Where a file source's original lives, by how it came: `upload` for the presigned flow, under
 * `uploads/` (the bucket's ObjectCreated notification is filtered on that prefix and suffix, and
 * its lifecycle expires what a failed or abandoned upload leaves), `file` for an accepted upload
 * and for multipart bodies stored by the API itself (no event needed).
 */
export const presignedFileKey = (workspaceId: string, id: string) =>
  `${UPLOADS_PREFIX}${sourceBlobPrefix(workspaceId, id)}upload`;
export const storedFileKey = (workspaceId: string, id: string) =>
  `${sourceBlobPrefix(workspaceId, id)}file`;

const PRESIGNED_KEY = /^uploads\/ws\/([^/]+)\/kb\/([^/]+)\/upload$/;

/** Which object-created notifications the upload queue receives (AWS and local alike). */
export const UPLOAD_NOTIFICATION_FILTER = { prefix: UPLOADS_PREFIX, suffix: "/upload" } as const;

/** The workspace and source a presigned upload's object key belongs to. */
export function parsePresignedKey(key: string): { workspaceId: string; id: string } | undefined {
  const match = PRESIGNED_KEY.exec(key);
  return match?.[1] && match[2] ? { workspaceId: match[1], id: match[2] } : undefined;
}

/**
 * The file name as given, without any client-side folder, made a display string (no controls,
 * bidi controls or invisible-only name); what `source_url_or_path` shows and a source's default
 * name. Its extension is read from what is left: `report\u202Efdp.exe` is an `.exe`.
 */
function cleanFilename(filename: string): string {
  return toDisplayText(
    filename.slice(Math.max(filename.lastIndexOf("/"), filename.lastIndexOf("\\")) + 1),
  ).slice(0, 255);
}

export interface AcceptedFile {
  filename: string;
  kind: FileKind;
  /** The canonical content type of the kind: stored with the object and signed into the policy. */
  contentType: string;
}

/**
 * Validates a file's declaration before a byte is stored: a name, a supported type
 * (`unsupported_media_type` with the accepted list), and a size within `maxBytes`
 * (`payload_too_large`; `tooLargeHint` tells where larger files go).
 */
export function acceptFile(
  file: { filename: string; contentType: string | null | undefined; bytes: number },
  maxBytes: number,
  tooLargeHint?: { message: string; details: Record<string, unknown> },
  /** The request's fields the name and the size come from, named by a 400. */
  fields: { name: string; bytes: string } = { name: "filename", bytes: "bytes" },
): AcceptedFile {
  const refuse = (path: string, message: string) =>
    invalid(message, { issues: [{ path, message }] });
  const filename = cleanFilename(file.filename);
  if (!filename) throw refuse(fields.name, "The file needs a name");
  if (file.bytes <= 0) throw refuse(fields.bytes, "The file is empty");
  if (file.bytes > maxBytes) {
    throw new DomainError(
      "payload_too_large",
      `Files are limited to ${megabytes(maxBytes)} here${tooLargeHint ? `; ${tooLargeHint.message}` : ""}`,
      { details: { limit: maxBytes, bytes: file.bytes, ...tooLargeHint?.details } },
    );
  }
  const declared = declaredType(filename, file.contentType);
  if (!declared.ok) {
    throw new DomainError("unsupported_media_type", declared.message, {
      details: { contentTypes: ACCEPTED_CONTENT_TYPES, extensions: ACCEPTED_EXTENSIONS },
    });
  }
  return { filename, kind: declared.kind, contentType: declared.contentType };
}
