import { z } from "zod";

/**
 * S3 event notifications as an SQS message body carries them: `{"Records": [...]}`, or the
 * `s3:TestEvent` S3 sends once when the notification is configured. The local runtime forwards
 * s3rver's `event` payloads, which have the same shape.
 */
const S3Notification = z.union([
  z.object({ Event: z.literal("s3:TestEvent") }),
  z.object({
    Records: z.array(
      z.object({
        eventName: z.string(),
        s3: z.object({ object: z.object({ key: z.string() }) }),
      }),
    ),
  }),
]);

/** Keys arrive URL-encoded, spaces as `+` (s3rver sends them raw, which decodes to itself here). */
function decodeKey(key: string): string {
  try {
    return decodeURIComponent(key.replace(/\+/g, " "));
  } catch {
    return key;
  }
}

/** The object keys an SQS message body reports as created; throws on a body that is no S3 notification. */
export function createdKeys(body: string): string[] {
  const notification = S3Notification.parse(JSON.parse(body));
  if (!("Records" in notification)) return [];
  return notification.Records.filter((r) => r.eventName.startsWith("ObjectCreated:")).map((r) =>
    decodeKey(r.s3.object.key),
  );
}
