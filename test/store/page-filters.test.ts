import { QueryCommand, type QueryCommandInput } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Item, Table } from "../../lib/store/table.js";
import { startAws, type TestAws } from "../support/aws.js";

/**
 * `Table.page` filters: `equals` and `anyOf` (an `IN (...)` list) apply before the page is cut,
 * so every page but the last is full and the cursors walk every match exactly once.
 */

interface Thing extends Item {
  n: number;
  colour: "red" | "green" | "blue" | "black";
  shape: "round" | "square";
  done: boolean;
}

const PK = "WS#page-filters";
const COLOURS = ["red", "green", "blue", "black"] as const;
const things: Thing[] = Array.from({ length: 60 }, (_, n) => ({
  pk: PK,
  sk: `T#${String(n).padStart(3, "0")}`,
  n,
  colour: COLOURS[n % 4] ?? "red",
  shape: n % 3 === 0 ? "square" : "round",
  done: n % 5 === 0,
}));

let aws: TestAws;
let table: Table;
/** The FilterExpression of each query the table sent. */
const filters: Array<string | undefined> = [];

beforeAll(async () => {
  aws = await startAws();
  table = aws.table;
  for (const thing of things) await table.put(thing);
  const send = table.doc.send.bind(table.doc);
  table.doc.send = ((command: unknown) => {
    if (command instanceof QueryCommand) {
      filters.push((command.input as QueryCommandInput).FilterExpression);
    }
    return send(command as Parameters<typeof send>[0]);
  }) as typeof table.doc.send;
});
afterAll(() => aws.close());

/** Every page of a query with `limit`, following the cursors: each page's `n`s. */
async function pages(query: Omit<Parameters<Table["page"]>[0], "pk" | "skPrefix" | "limit">) {
  const out: number[][] = [];
  let cursor: string | undefined;
  do {
    const page = await table.page<Thing>({ pk: PK, skPrefix: "T#", limit: 4, cursor, ...query });
    out.push(page.items.map((t) => t.n));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

/** Pages of 4 (the last one shorter) of what matches, in order. */
const cut = (ns: number[], newestFirst = false) => {
  const ordered = newestFirst ? [...ns].reverse() : ns;
  return Array.from({ length: Math.ceil(ordered.length / 4) || 1 }, (_, i) =>
    ordered.slice(i * 4, i * 4 + 4),
  );
};
const where = (keep: (t: Thing) => boolean) => things.filter(keep).map((t) => t.n);

describe("Table.page filters", () => {
  it("keeps the items holding any of a field's values, in full pages", async () => {
    const expected = where((t) => t.colour === "red" || t.colour === "black");
    expect(await pages({ anyOf: { colour: ["red", "black"] } })).toEqual(cut(expected));
    expect(await pages({ anyOf: { colour: ["red", "black"] }, newestFirst: true })).toEqual(
      cut(expected, true),
    );
  });

  it("takes one value as equality, and ignores an empty or absent list", async () => {
    expect(await pages({ anyOf: { colour: ["blue"] } })).toEqual(
      cut(where((t) => t.colour === "blue")),
    );
    expect(await pages({ anyOf: { colour: [] } })).toEqual(cut(where(() => true)));
    expect(await pages({ anyOf: { colour: undefined } })).toEqual(cut(where(() => true)));
  });

  it("combines lists and equals as an intersection", async () => {
    const expected = where(
      (t) => (t.colour === "green" || t.colour === "blue") && t.shape === "square" && !t.done,
    );
    expect(expected.length).toBeGreaterThan(4);
    expect(
      await pages({
        anyOf: { colour: ["green", "blue", "green"], shape: ["square"] },
        equals: { done: false },
      }),
    ).toEqual(cut(expected));
  });

  it("asks DynamoDB with one FilterExpression: = for one value, IN for several", async () => {
    filters.length = 0;
    await table.page<Thing>({
      pk: PK,
      skPrefix: "T#",
      limit: 2,
      equals: { done: true },
      anyOf: { colour: ["red", "green"], shape: ["round"] },
    });
    expect(filters[0]).toBe("#e0 = :e0 AND #a0 IN (:a0_0, :a0_1) AND #a1 = :a1_0");
  });

  it("finds nothing, with no cursor, when no item matches", async () => {
    expect(
      await pages({ anyOf: { colour: ["red"] }, equals: { shape: "nope" as "round" } }),
    ).toEqual([[]]);
  });
});
