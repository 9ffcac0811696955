import type { UploadEvent } from "../../store/queue.js";

/** Keys arrive URL-encoded, spaces as `+` (s3rver sends them raw, which decodes to itself here). */
function decodeKey(key: string): string {
  try {
    return decodeURIComponent(key.replace(/\+/g, " "));
  } catch {
    return key;
  }
}

/** The object keys a bucket notification reports as created. */
export function createdKeys(notification: UploadEvent): string[] {
  if (!("Records" in notification)) return [];
  return notification.Records.filter((r) => r.eventName.startsWith("ObjectCreated:")).map((r) =>
    decodeKey(r.s3.object.key),
  );
}
