/**
 * The table's key design, shared by the CDK stack and the local runtime so both build the same
 * table. Two generic, sparse global secondary indexes (`gsi1`, `gsi2`) serve cross-item lookups:
 * an item appears in one only while it carries that index's key attributes.
 */
export const TABLE_KEY = { partitionKey: "pk", sortKey: "sk" } as const;

export const TABLE_INDEXES = [
  { name: "gsi1", partitionKey: "gsi1pk", sortKey: "gsi1sk" },
  { name: "gsi2", partitionKey: "gsi2pk", sortKey: "gsi2sk" },
] as const;

export type IndexName = (typeof TABLE_INDEXES)[number]["name"];

/** Attribute holding an item's expiry (epoch seconds) for DynamoDB's time to live. */
export const TTL_ATTRIBUTE = "expiresAt";

/**
 * Partitions a busy `gsi1` partition is spread over (the indexing sources of every workspace):
 * an item goes to `{partition}#{shard}`, the shard a hash of its workspace, and whoever reads the
 * partition reads every shard. One GSI partition takes about 1,000 writes a second; sixteen keep
 * one tenant's bulk import from throttling everyone else's indexing.
 */
export const GSI1_SHARDS = 16;

/** The shard (0 to `GSI1_SHARDS - 1`) of a key, stable across processes (FNV-1a). */
export function shardOf(key: string, shards = GSI1_SHARDS): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}
