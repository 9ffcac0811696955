import { describe, expect, it } from "vitest";
import { createdKeys } from "../../lib/knowledge/uploads/events.js";
import { parseMessage, UploadEvent } from "../../lib/store/queue.js";

/** The created keys of an uploads-queue message body, read as the worker reads it. */
const keysIn = (body: string) => createdKeys(parseMessage(UploadEvent, body));

const record = (eventName: string, key: string) => ({
  eventVersion: "2.1",
  eventSource: "aws:s3",
  eventName,
  s3: { bucket: { name: "kb" }, object: { key, size: 10 } },
});

describe("S3 notifications in queue messages", () => {
  it("yields the keys of created objects, decoded", () => {
    const body = JSON.stringify({
      Records: [
        record("ObjectCreated:Post", "ws/ws_1/kb/kb_1/upload"),
        record("ObjectCreated:Put", "ws/ws_1/kb/kb_2/My+Report%C3%A9.pdf"),
        record("ObjectRemoved:Delete", "ws/ws_1/kb/kb_3/upload"),
      ],
    });
    expect(keysIn(body)).toEqual(["ws/ws_1/kb/kb_1/upload", "ws/ws_1/kb/kb_2/My Reporté.pdf"]);
  });

  it("yields nothing for the test event S3 sends when the notification is set up", () => {
    const body = JSON.stringify({
      Service: "Amazon S3",
      Event: "s3:TestEvent",
      Time: "2025-01-01T00:00:00.000Z",
      Bucket: "kb",
    });
    expect(keysIn(body)).toEqual([]);
  });

  it("keeps a raw key that is not valid URL encoding as it is", () => {
    expect(keysIn(JSON.stringify({ Records: [record("ObjectCreated:Put", "100%")] }))).toEqual([
      "100%",
    ]);
  });

  it("throws on a body that is not an S3 notification, so the message is retried and dead-lettered", () => {
    expect(() => keysIn("{}")).toThrow();
    expect(() => keysIn("not json")).toThrow();
  });
});
