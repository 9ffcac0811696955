import {
  AbortMultipartUploadCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Blobs } from "../../lib/store/blobs.js";
import { startAws, type TestAws } from "../support/aws.js";

/**
 * `Blobs.purge` removes everything under a prefix for good. Against the S3 emulator, which keeps
 * no versions, it deletes the objects. The deployed bucket is versioned, and there a delete only
 * hides an object behind a marker: the purge must delete every version and marker by its version
 * id, and abort unfinished multipart uploads, through paged listings. The emulator implements
 * neither listing, so that part runs against a small versioned bucket kept in memory, answering
 * the four calls the purge makes as S3 does.
 */

interface Version {
  Key: string;
  VersionId: string;
  marker: boolean;
}

/** A versioned bucket in memory: listings come back two entries a page, as a truncated S3 list. */
function versionedBucket(versions: Version[], uploads: Array<{ Key: string; UploadId: string }>) {
  const page = <T>(items: T[], start: number) => ({
    items: items.slice(start, start + 2),
    next: start + 2 < items.length ? String(start + 2) : undefined,
  });
  const send = async (command: unknown) => {
    if (command instanceof ListObjectVersionsCommand) {
      const { Prefix = "", KeyMarker } = command.input;
      const under = versions.filter((v) => v.Key.startsWith(Prefix));
      const { items, next } = page(under, Number(KeyMarker ?? 0));
      return {
        Versions: items.filter((v) => !v.marker).map(({ Key, VersionId }) => ({ Key, VersionId })),
        DeleteMarkers: items
          .filter((v) => v.marker)
          .map(({ Key, VersionId }) => ({ Key, VersionId })),
        IsTruncated: next !== undefined,
        NextKeyMarker: next,
        NextVersionIdMarker: next && "v",
      };
    }
    if (command instanceof ListMultipartUploadsCommand) {
      const { Prefix = "", KeyMarker } = command.input;
      const { items, next } = page(
        uploads.filter((u) => u.Key.startsWith(Prefix)),
        Number(KeyMarker ?? 0),
      );
      return {
        Uploads: items,
        IsTruncated: next !== undefined,
        NextKeyMarker: next,
        NextUploadIdMarker: next && "u",
      };
    }
    if (command instanceof DeleteObjectsCommand) {
      for (const { Key, VersionId } of command.input.Delete?.Objects ?? []) {
        const at = versions.findIndex((v) => v.Key === Key && v.VersionId === VersionId);
        if (at >= 0) versions.splice(at, 1);
      }
      return {};
    }
    if (command instanceof AbortMultipartUploadCommand) {
      const at = uploads.findIndex((u) => u.UploadId === command.input.UploadId);
      if (at >= 0) uploads.splice(at, 1);
      return {};
    }
    throw new Error(`not a call the purge makes: ${String(command)}`);
  };
  return new Blobs({ send } as unknown as S3Client, "bucket");
}

describe("purging a prefix", () => {
  it("deletes every version and delete marker of a versioned bucket, and unfinished uploads", async () => {
    const versions: Version[] = [
      { Key: "ws/ws_a/kb/1/content.txt", VersionId: "v1", marker: false },
      { Key: "ws/ws_a/kb/1/content.txt", VersionId: "v2", marker: false },
      { Key: "ws/ws_a/kb/2/content.txt", VersionId: "v3", marker: true },
      { Key: "ws/ws_a/kb/2/content.txt", VersionId: "v4", marker: false },
      { Key: "ws/ws_a/competitors/c/s.json", VersionId: "v5", marker: false },
      { Key: "ws/ws_b/kb/1/content.txt", VersionId: "v6", marker: false },
    ];
    const uploads = [
      { Key: "ws/ws_a/big", UploadId: "u1" },
      { Key: "ws/ws_a/bigger", UploadId: "u2" },
      { Key: "ws/ws_a/biggest", UploadId: "u3" },
      { Key: "ws/ws_b/big", UploadId: "u4" },
    ];
    const blobs = versionedBucket(versions, uploads);
    expect(await blobs.countUnder("ws/ws_a/")).toBe(8);
    expect(await blobs.purge("ws/ws_a/")).toBe(8);
    expect(await blobs.countUnder("ws/ws_a/")).toBe(0);
    // Another workspace's versions and uploads stay.
    expect(versions.map((v) => v.VersionId)).toEqual(["v6"]);
    expect(uploads.map((u) => u.UploadId)).toEqual(["u4"]);
  });
});

describe("purging a prefix in the emulator, which keeps no versions", () => {
  let aws: TestAws;
  beforeAll(async () => {
    aws = await startAws();
  });
  afterAll(() => aws.close());

  it("deletes the objects under the prefix, and only those", async () => {
    for (const key of ["ws/ws_a/kb/1/content.txt", "ws/ws_a/x", "ws/ws_ab/x", "ws/ws_b/x"]) {
      await aws.blobs.put(key, "text", "text/plain");
    }
    expect(await aws.blobs.countUnder("ws/ws_a/")).toBe(2);
    expect(await aws.blobs.purge("ws/ws_a/")).toBe(2);
    expect((await aws.blobs.list("ws/")).sort()).toEqual(["ws/ws_ab/x", "ws/ws_b/x"]);
  });
});
