import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { loadConfig } from "../../lib/config.js";
import { createStores, type Stores } from "../../lib/store/clients.js";

/**
 * Everything the service has stored, read straight from the runtime's emulated table and bucket:
 * what proves that a rejected request wrote nothing and that a deleted source left nothing behind.
 */

/** The runtime's table and bucket; call after the runtime has set the environment. */
export const runtimeStores = (): Stores => createStores(loadConfig());

/**
 * Items that change on every request by design: the per-workspace rate-limit counters. (Quota
 * counters are kept: a rejected request must not spend a quota.)
 */
const BOOKKEEPING = /^RATE#/;

export interface StoreSnapshot {
  /** `pk | sk` to the item as JSON. */
  items: Map<string, string>;
  /** Object key to its ETag and size. */
  objects: Map<string, string>;
}

export async function snapshot(stores: Stores): Promise<StoreSnapshot> {
  const items = new Map<string, string>();
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await stores.table.doc.send(
      new ScanCommand({
        TableName: stores.table.name,
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const key = `${String(item.pk)} | ${String(item.sk)}`;
      if (!BOOKKEEPING.test(String(item.sk))) items.set(key, JSON.stringify(item));
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);

  const objects = new Map<string, string>();
  let token: string | undefined;
  do {
    const page = await stores.blobs.s3.send(
      new ListObjectsV2Command({ Bucket: stores.blobs.bucket, ContinuationToken: token }),
    );
    for (const object of page.Contents ?? []) {
      if (object.Key) objects.set(object.Key, `${object.ETag ?? ""} ${object.Size ?? 0}`);
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return { items, objects };
}

/** What differs between two snapshots, one line per item or object; empty when nothing does. */
export function changes(before: StoreSnapshot, after: StoreSnapshot): string[] {
  const diff = (kind: string, a: Map<string, string>, b: Map<string, string>) => [
    ...[...b.keys()].filter((k) => !a.has(k)).map((k) => `${kind} added: ${k}`),
    ...[...a.keys()].filter((k) => !b.has(k)).map((k) => `${kind} removed: ${k}`),
    ...[...a.keys()]
      .filter((k) => b.has(k) && a.get(k) !== b.get(k))
      .map((k) => `${kind} changed: ${k}: ${a.get(k)} -> ${b.get(k)}`),
  ];
  return [
    ...diff("item", before.items, after.items),
    ...diff("object", before.objects, after.objects),
  ];
}
