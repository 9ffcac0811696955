/** The table's key design, shared by the CDK stack and the local runtime so both build the same table. */
export const TABLE_KEY = { partitionKey: "pk", sortKey: "sk" } as const;
