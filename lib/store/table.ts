import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  BatchWriteCommand,
  type BatchWriteCommandOutput,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { DomainError } from "../errors.js";
import { and, type Condition, compile, exists, missing, or, Placeholders } from "./conditions.js";
import { type IndexName, TABLE_INDEXES, TTL_ATTRIBUTE } from "./schema.js";

export type Item = Record<string, unknown> & { pk: string; sk: string };

/** Partition key of everything a workspace owns: tenant data never shares a partition. */
export const wsKey = (workspaceId: string) => `WS#${workspaceId}`;

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface PageQuery<T extends Item = Item> {
  pk: string;
  skPrefix: string;
  limit: number;
  cursor?: string | undefined;
  /** Keeps only items whose fields equal these values (undefined ones are ignored); applied before the page is cut, so pages stay full. */
  equals?: Partial<T>;
  /**
   * Keeps only items whose field holds any of its values (`IN (...)`; undefined or empty lists
   * are ignored, at most 100 values a field); applied with `equals` before the page is cut.
   */
  anyOf?: { [K in Extract<keyof T, string>]?: readonly T[K][] | undefined };
  /** Keeps only items whose field is at least `from` and below `to` (either may be left out). */
  range?: { field: Extract<keyof T, string>; from?: string | undefined; to?: string | undefined };
  newestFirst?: boolean;
}

/** Most values DynamoDB takes in one `IN (...)`. */
const MAX_IN_VALUES = 100;

/** An expression with its placeholders, as a request carries it. */
interface Expression {
  expression: string;
  values: Record<string, unknown>;
  names?: Record<string, string>;
}

/** A page query's `equals` and `anyOf` as one FilterExpression, or undefined without either. */
function filterOf<T extends Item>(q: PageQuery<T>): Expression | undefined {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const terms: string[] = [];
  const equal = Object.entries(q.equals ?? {}).filter(([, value]) => value !== undefined);
  equal.forEach(([field, value], i) => {
    names[`#e${i}`] = field;
    values[`:e${i}`] = value;
    terms.push(`#e${i} = :e${i}`);
  });
  const lists = Object.entries(q.anyOf ?? {}).flatMap(([field, list]) =>
    Array.isArray(list) && list.length > 0 ? [[field, [...new Set(list)]] as const] : [],
  );
  lists.forEach(([field, list], i) => {
    if (list.length > MAX_IN_VALUES) {
      throw new Error(`anyOf.${field}: over ${MAX_IN_VALUES} values`);
    }
    names[`#a${i}`] = field;
    const placeholders = list.map((value, j) => {
      values[`:a${i}_${j}`] = value;
      return `:a${i}_${j}`;
    });
    terms.push(
      placeholders.length === 1
        ? `#a${i} = ${placeholders[0]}`
        : `#a${i} IN (${placeholders.join(", ")})`,
    );
  });
  if (q.range && (q.range.from !== undefined || q.range.to !== undefined)) {
    names["#r"] = q.range.field;
    for (const [bound, op] of [
      ["from", ">="],
      ["to", "<"],
    ] as const) {
      const value = q.range[bound];
      if (value === undefined) continue;
      values[`:r${bound}`] = value;
      terms.push(`#r ${op} :r${bound}`);
    }
  }
  return terms.length > 0 ? { expression: terms.join(" AND "), names, values } : undefined;
}

/** Cursors name the sort key of the last item returned, never a partition: they cannot cross tenants. */
function decodeCursor(cursor: string, skPrefix: string): string {
  try {
    const sk = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (typeof sk === "string" && sk.startsWith(skPrefix)) return sk;
  } catch {
    // falls through to the error below
  }
  throw new DomainError("invalid_cursor", "The cursor is not one this list returned");
}

const encodeCursor = (sk: string) => Buffer.from(JSON.stringify(sk), "utf8").toString("base64url");

/**
 * The cursor of the page that starts after the item with this sort key, as `page` answers it: a
 * reader that stops part-way through a page can carry on after its last item.
 */
export const cursorAfter = (sk: string) => encodeCursor(sk);

/**
 * A partition's items under a sort key prefix, as a query's key condition; the whole partition
 * without a prefix (an empty string is no key value DynamoDB need take).
 */
const keyCondition = (pk: string, skPrefix: string) =>
  skPrefix
    ? {
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": pk, ":prefix": skPrefix },
      }
    : { KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": pk } };

/** Items in one BatchWriteItem request, at most. */
const BATCH_WRITE = 25;

export const isConditionFailure = (err: unknown) => err instanceof ConditionalCheckFailedException;

/** One update of an item. Fields whose value is undefined are left out. */
export interface Change {
  set?: Record<string, unknown>;
  /** Added to numbers, or to string sets. */
  add?: Record<string, number | Set<string> | undefined>;
  /** Taken out of string sets; a set left empty disappears from the item. */
  pull?: Record<string, Set<string> | undefined>;
  remove?: string[];
  /** Holds besides the item existing (built with `lib/store/conditions.ts`). */
  condition?: Condition | undefined;
  /** Creates the item when there is none; the condition then holds only for an existing item. */
  upsert?: boolean;
}

/** The service's single DynamoDB table (pk/sk strings, on-demand). */
export class Table {
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly name: string,
  ) {}

  async get<T extends Item>(pk: string, sk: string, consistent = true): Promise<T | undefined> {
    const res = await this.doc.send(
      new GetCommand({ TableName: this.name, Key: { pk, sk }, ConsistentRead: consistent }),
    );
    return res.Item as T | undefined;
  }

  /** Writes a new item; false when one with the same key exists already. */
  async create(item: Item): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.name,
          Item: item,
          ConditionExpression: "attribute_not_exists(pk)",
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  async put(item: Item): Promise<void> {
    await this.doc.send(new PutCommand({ TableName: this.name, Item: item }));
  }

  /**
   * Sets attributes of an existing item, under an optional extra condition.
   * Answers the updated item, or undefined when the item is gone or the condition failed.
   */
  update<T extends Item>(
    pk: string,
    sk: string,
    set: Record<string, unknown>,
    condition?: Condition,
    remove: string[] = [],
  ): Promise<T | undefined> {
    return this.change<T>(pk, sk, { set, condition, remove });
  }

  /**
   * One update of an item: SET, ADD and REMOVE under a condition. Answers the item as it is
   * now, or undefined when the condition failed (or the item is missing, unless `upsert`).
   */
  async change<T extends Item>(pk: string, sk: string, change: Change): Promise<T | undefined> {
    const { condition } = change;
    const to = new Placeholders();
    const clause = (verb: "SET" | "ADD" | "DELETE", fields: Record<string, unknown> = {}) => {
      const between = verb === "SET" ? " = " : " ";
      const parts = Object.entries(fields)
        .filter(([, value]) => value !== undefined)
        .map(([field, value]) => `${to.name(field)}${between}${to.value(value)}`);
      return parts.length > 0 ? `${verb} ${parts.join(", ")}` : "";
    };
    const set = clause("SET", change.set);
    const add = clause("ADD", change.add);
    const pull = clause("DELETE", change.pull);
    const removed = (change.remove ?? []).map((field) => to.name(field));
    const expression = [set, add, pull, removed.length > 0 ? `REMOVE ${removed.join(", ")}` : ""]
      .filter(Boolean)
      .join(" ");
    const guard = change.upsert
      ? condition && or(missing("pk"), condition)
      : condition
        ? and(exists("pk"), condition)
        : exists("pk");
    const conditionExpression = guard && compile(guard, to);
    const values = to.values;
    try {
      const res = await this.doc.send(
        new UpdateCommand({
          TableName: this.name,
          Key: { pk, sk },
          UpdateExpression: expression,
          ConditionExpression: conditionExpression,
          ExpressionAttributeNames: to.names,
          ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
          ReturnValues: "ALL_NEW",
        }),
      );
      return res.Attributes as T;
    } catch (err) {
      if (isConditionFailure(err)) return undefined;
      throw err;
    }
  }

  /**
   * Adds `amount` to a numeric attribute (creating the item). With `limits`, not past `max`:
   * answers undefined when the limit would be exceeded, and `expiresAt` (epoch seconds) lets
   * DynamoDB's time to live remove counters whose window has passed.
   */
  async increment(
    pk: string,
    sk: string,
    field: string,
    amount: number,
    limits?: { max: number; expiresAt: number },
  ): Promise<number | undefined> {
    // The condition below admits any amount while the counter does not exist yet.
    if (limits && amount > limits.max) return undefined;
    try {
      const res = await this.doc.send(
        new UpdateCommand({
          TableName: this.name,
          Key: { pk, sk },
          ...(limits
            ? {
                UpdateExpression: "ADD #n :amount SET #ttl = :ttl",
                ConditionExpression: "attribute_not_exists(#n) OR #n <= :room",
                ExpressionAttributeNames: { "#n": field, "#ttl": TTL_ATTRIBUTE },
                ExpressionAttributeValues: {
                  ":amount": amount,
                  ":room": limits.max - amount,
                  ":ttl": limits.expiresAt,
                },
              }
            : {
                UpdateExpression: "ADD #n :amount",
                ExpressionAttributeNames: { "#n": field },
                ExpressionAttributeValues: { ":amount": amount },
              }),
          ReturnValues: "UPDATED_NEW",
        }),
      );
      return Number(res.Attributes?.[field] ?? amount);
    } catch (err) {
      if (isConditionFailure(err)) return undefined;
      throw err;
    }
  }

  /**
   * Takes `amount` off a numeric attribute of an existing item, unless that would take it below
   * zero; false when the item, the attribute or enough of it is missing.
   */
  async decrement(pk: string, sk: string, field: string, amount: number): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.name,
          Key: { pk, sk },
          UpdateExpression: "ADD #n :minus",
          ConditionExpression: "#n >= :amount",
          ExpressionAttributeNames: { "#n": field },
          ExpressionAttributeValues: { ":minus": -amount, ":amount": amount },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** Deletes an item; false when there was none, or the extra condition failed. */
  async delete(pk: string, sk: string, condition?: Condition): Promise<boolean> {
    const to = new Placeholders();
    const expression = compile(condition ? and(exists("pk"), condition) : exists("pk"), to);
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.name,
          Key: { pk, sk },
          ConditionExpression: expression,
          ExpressionAttributeNames: to.names,
          ...(Object.keys(to.values).length > 0 ? { ExpressionAttributeValues: to.values } : {}),
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /**
   * The items of one partition with these sort keys, in no particular order; missing ones are
   * left out. Reads 100 keys a request, consistently, and asks again for keys DynamoDB left
   * unprocessed.
   */
  async getMany<T extends Item>(pk: string, sks: readonly string[]): Promise<T[]> {
    const items: T[] = [];
    for (let start = 0; start < sks.length; start += 100) {
      let keys: Record<string, unknown>[] | undefined = [
        ...new Set(sks.slice(start, start + 100)),
      ].map((sk) => ({ pk, sk }));
      while (keys && keys.length > 0) {
        const res: BatchGetCommandOutput = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.name]: { Keys: keys, ConsistentRead: true } },
          }),
        );
        items.push(...((res.Responses?.[this.name] ?? []) as T[]));
        keys = res.UnprocessedKeys?.[this.name]?.Keys;
      }
    }
    return items;
  }

  /**
   * One page of the items with these sort keys (all under `skPrefix`), newest (highest key)
   * first, those `keep` refuses left out: reads only what the page shows and what it drops.
   */
  async pageOfKeys<T extends Item>(q: {
    pk: string;
    skPrefix: string;
    sks: readonly string[];
    limit: number;
    cursor?: string | undefined;
    keep?: (item: T) => boolean;
  }): Promise<Page<T>> {
    const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor, q.skPrefix);
    const sks = [...new Set(q.sks)]
      .filter((sk) => after === undefined || sk < after)
      .sort()
      .reverse();
    const items: T[] = [];
    // One more than asked tells whether a next page exists.
    for (let start = 0; start < sks.length && items.length <= q.limit; start += 100) {
      const found = await this.getMany<T>(q.pk, sks.slice(start, start + 100));
      items.push(
        ...found.filter((item) => q.keep?.(item) ?? true).sort((a, b) => b.sk.localeCompare(a.sk)),
      );
    }
    const pageItems = items.slice(0, q.limit);
    const last = pageItems.at(-1);
    return {
      items: pageItems,
      nextCursor: items.length > q.limit && last ? encodeCursor(last.sk) : null,
    };
  }

  /** One page of a partition's items whose sort key starts with a prefix. */
  async page<T extends Item>(q: PageQuery<T>): Promise<Page<T>> {
    const filter = filterOf(q);
    const items: T[] = [];
    const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor, q.skPrefix);
    let startKey: Record<string, unknown> | undefined = after ? { pk: q.pk, sk: after } : undefined;
    // One more than asked tells whether a next page exists.
    while (items.length <= q.limit) {
      const input: QueryCommandInput = {
        TableName: this.name,
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": q.pk, ":prefix": q.skPrefix, ...filter?.values },
        ScanIndexForward: !q.newestFirst,
        ExclusiveStartKey: startKey,
        Limit: Math.max(q.limit + 1 - items.length, filter ? 100 : 1),
      };
      if (filter) {
        input.FilterExpression = filter.expression;
        input.ExpressionAttributeNames = filter.names;
      }
      const res = await this.doc.send(new QueryCommand(input));
      items.push(...((res.Items ?? []) as T[]));
      startKey = res.LastEvaluatedKey;
      if (!startKey) break;
    }
    const pageItems = items.slice(0, q.limit);
    const last = pageItems.at(-1);
    return {
      items: pageItems,
      nextCursor: items.length > q.limit && last ? encodeCursor(last.sk) : null,
    };
  }

  /** Items of a global secondary index partition whose sort key is below `before`, oldest first. */
  async queryIndex<T extends Item>(
    index: IndexName,
    partition: string,
    before: string,
    limit = 100,
  ): Promise<T[]> {
    const keys = TABLE_INDEXES.find((i) => i.name === index);
    if (!keys) throw new Error(`No index ${index}`);
    const res = await this.doc.send(
      new QueryCommand({
        TableName: this.name,
        IndexName: index,
        KeyConditionExpression: "#pk = :pk AND #sk < :before",
        ExpressionAttributeNames: { "#pk": keys.partitionKey, "#sk": keys.sortKey },
        ExpressionAttributeValues: { ":pk": partition, ":before": before },
        Limit: limit,
      }),
    );
    return (res.Items ?? []) as T[];
  }

  /** Every item of a global secondary index partition, in its sort order. */
  async allInIndex<T extends Item>(index: IndexName, partition: string): Promise<T[]> {
    const keys = TABLE_INDEXES.find((i) => i.name === index);
    if (!keys) throw new Error(`No index ${index}`);
    const items: T[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const res = await this.doc.send(
        new QueryCommand({
          TableName: this.name,
          IndexName: index,
          KeyConditionExpression: "#pk = :pk",
          ExpressionAttributeNames: { "#pk": keys.partitionKey },
          ExpressionAttributeValues: { ":pk": partition },
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...((res.Items ?? []) as T[]));
      startKey = res.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  /** Every item of a partition under a prefix, with only the named attributes. */
  async all<T extends Item>(pk: string, skPrefix: string, attributes?: string[]): Promise<T[]> {
    const items: T[] = [];
    let startKey: Record<string, unknown> | undefined;
    const names = attributes
      ? Object.fromEntries(attributes.map((a, i) => [`#a${i}`, a]))
      : undefined;
    do {
      const res = await this.doc.send(
        new QueryCommand({
          TableName: this.name,
          ...keyCondition(pk, skPrefix),
          ExclusiveStartKey: startKey,
          ...(names
            ? {
                ProjectionExpression: Object.keys(names).join(", "),
                ExpressionAttributeNames: names,
              }
            : {}),
        }),
      );
      items.push(...((res.Items ?? []) as T[]));
      startKey = res.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  /**
   * Deletes every item of a partition under a prefix, a page of keys at a time (25 deletes a
   * request, unprocessed ones sent again), unconditionally; answers how many were deleted. A run
   * cut short leaves the rest where the next run finds them.
   */
  async deleteAll(pk: string, skPrefix: string): Promise<number> {
    let deleted = 0;
    for (;;) {
      const res = await this.doc.send(
        new QueryCommand({
          TableName: this.name,
          ...keyCondition(pk, skPrefix),
          ProjectionExpression: "pk, sk",
          ConsistentRead: true,
          Limit: 500,
        }),
      );
      const keys = (res.Items ?? []).map((item) => ({ pk: item.pk, sk: item.sk }));
      if (keys.length === 0) return deleted;
      for (let start = 0; start < keys.length; start += BATCH_WRITE) {
        let requests: BatchWriteCommandOutput["UnprocessedItems"] = {
          [this.name]: keys
            .slice(start, start + BATCH_WRITE)
            .map((Key) => ({ DeleteRequest: { Key } })),
        };
        while (requests && (requests[this.name]?.length ?? 0) > 0) {
          const written: BatchWriteCommandOutput = await this.doc.send(
            new BatchWriteCommand({ RequestItems: requests }),
          );
          requests = written.UnprocessedItems;
        }
      }
      deleted += keys.length;
    }
  }
}
