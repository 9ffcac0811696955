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
