import fc from "fast-check";
import { multipart, type RawRequest } from "./probe.js";
import { type ApiRoute, idPrefixes, type JsonSchema, minimalValid, unknownId } from "./surface.js";

/**
 * fast-check arbitraries for hostile requests: values of the wrong type, huge and strange
 * strings, nested junk, prototype-pollution keys, odd ids and path traversal, and bodies that
 * are not JSON at all. JSON is built as text here, so keys such as `__proto__` and duplicate
 * keys reach the server exactly as written.
 */

/**
 * The seed of a fuzz run: `FUZZ_SEED` replays one, otherwise each run explores a fresh one. It is
 * printed, and every failure names it.
 */
export function fuzzSeed(suite: string): number {
  const seed = process.env.FUZZ_SEED
    ? Number(process.env.FUZZ_SEED)
    : Math.floor(Math.random() * 2 ** 31);
  console.info(`${suite}: FUZZ_SEED=${seed}`);
  return seed;
}

/** A JSON value as text is built: objects keep their entries in order, duplicates and all. */
export type Json =
  | null
  | boolean
  | number
  | string
  | Json[]
  | { entries: Array<[string, Json]> }
  /** A number literal JSON allows but JavaScript cannot hold (`1e400`, 40 digits). */
  | { raw: string };

export function toJsonText(value: Json): string {
  if (value === null || typeof value !== "object") {
    // NaN and the infinities have no JSON spelling; JSON.stringify writes null, as a client would.
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(",")}]`;
  if ("raw" in value) return value.raw;
  return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(",")}}`;
}

/** A plain value (from `minimalValid`) as a `Json`. */
export function fromPlain(value: unknown): Json {
  if (value === null || value === undefined) return null;
  if (typeof value === "boolean" || typeof value === "number" || typeof value === "string") {
    return value;
  }
  if (Array.isArray(value)) return value.map(fromPlain);
  if (typeof value === "object") {
    return { entries: Object.entries(value).map(([k, v]) => [k, fromPlain(v)]) };
  }
  return String(value);
}

/** Keys that pollute prototypes in careless merges, and keys that shadow built-ins. */
export const POLLUTING_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "__defineGetter__",
  "hasOwnProperty",
  "toString",
  "valueOf",
  "then",
];

/** Strings that have broken parsers, stores, templates and shells before. */
export const NASTY_STRINGS = [
  "",
  " ",
  "\t\n\r",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff\ud800",
  "\u202e\u202d",
  "\ufeff",
  "\u200b\u200c\u200d",
  "𝕳𝖊𝖑𝖑𝖔",
  "👩‍👩‍👧‍👦",
  "Z̴̡̪̫͖̥̔̿̃̈̏̎͠͝á̸̡̫̯͉̀̓",
  "日本語のテキスト",
  "مرحبا بالعالم",
  "null",
  "undefined",
  "NaN",
  "true",
  "0",
  "-1",
  "1e309",
  "<script>alert(1)</script>",
  "'; DROP TABLE sources; --",
  '" OR "1"="1',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j-style lookup, meant literally.
  "${jndi:ldap://x/a}",
  "{{7*7}}",
  "%s%n%x%d",
  "../../../../etc/passwd",
  "..\\..\\windows\\win.ini",
  "%2e%2e%2f%2e%2e%2f",
  "/dev/random",
  "\r\nX-Injected: 1",
  "KB#",
  "WS#ws_00000000000000000000000000",
  "#",
  "?",
  "%",
  "javascript:alert(1)",
  "file:///etc/passwd",
  "http://169.254.169.254/latest/meta-data/",
  "http://[::1]/",
  ...POLLUTING_KEYS,
];

/** Sizes for long strings: a page, past most field limits, past the text limit, past the body limit. */
const LONG = [5_000, 70_000, 1_100_000, 2_200_000];

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY_STRINGS), weight: 4 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: "binary-ascii", maxLength: 40 }), weight: 1 },
  {
    arbitrary: fc
      .tuple(fc.constantFrom(...LONG), fc.constantFrom("a", "é", "🙂", "\u0000", "<p>"))
      .map(([n, unit]) => unit.repeat(Math.ceil(n / unit.length))),
    weight: 1,
  },
);

const number: fc.Arbitrary<Json> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, -1, 1.5, 2 ** 53 + 2, -(2 ** 63), 1e308, Number.NaN, Infinity),
  fc
    .constantFrom("1e400", "-1e400", "1234567890123456789012345678901234567890", "0.1e-400")
    .map((raw) => ({ raw })),
);

const scalar: fc.Arbitrary<Json> = fc.oneof(fc.constant(null), fc.boolean(), number, hostileString);

const key: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...POLLUTING_KEYS),
  fc.string({ maxLength: 12 }),
  hostileString.filter((s) => s.length < 100),
);

/** Any JSON value, nested a few levels, with polluting keys among the object keys. */
export const hostileValue: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalar,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.array(fc.tuple(key, tie("value")), { maxLength: 4 }).map((entries): Json => ({ entries })),
  ),
})).value;

/** JSON nested deeper than any parser's recursion should be trusted with. */
const deepNesting = fc
  .tuple(fc.constantFrom(1_000, 100_000), fc.constantFrom("[", '{"a":'))
  .map(([depth, open]) => open.repeat(depth) + (open === "[" ? "]" : "1}").repeat(depth));

/** Bodies that are not (valid) JSON. */
export const brokenJson: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "{",
    "}",
    "{'text':'single quotes'}",
    '{"text": "unterminated',
    '{"text":"a",}',
    "NaN",
    "undefined",
    "\ufeff{}",
    '{"a":1}{"b":2}',
    "[1,2",
    "\u0000",
    '{"\\ud800":"x"}',
    '{"text":"\\u00"}',
  ),
  fc.string({ unit: "binary", maxLength: 60 }),
  deepNesting,
);

export type BodyKind =
  | "none"
  | "valid"
  | "shaped"
  | "near-valid"
  | "hostile-content"
  | "any-json"
  | "broken"
  | "multipart";

export interface HostileBody {
  kind: BodyKind;
  /** JSON text, or form fields for multipart (the file field's bytes, name and type). */
  text?: string;
  form?: {
    field: string;
    bytes: Uint8Array;
    filename: string;
    type: string;
    /** Other fields of the form, as name and value. */
    extra: Array<[string, string]>;
  };
  contentType: string | undefined;
}

const jsonTypes = fc.oneof(
  { arbitrary: fc.constant("application/json"), weight: 8 },
  {
    arbitrary: fc.constantFrom(
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/json; charset=utf-16",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=----hostile",
      "application/xml",
      "application/json, text/html",
    ),
    weight: 2,
  },
  { arbitrary: fc.constant(undefined), weight: 1 },
);

/** The alternatives of a schema (`anyOf`, `oneOf`), or the schema itself. */
const branchesOf = (schema: JsonSchema): JsonSchema[] => schema.anyOf ?? schema.oneOf ?? [schema];

/** Objects that look like the schema: its own property names (of any branch), with hostile values. */
function shapedObject(schema: JsonSchema): fc.Arbitrary<Json> {
  const names = [
    ...new Set(branchesOf(schema).flatMap((branch) => Object.keys(branch.properties ?? {}))),
  ];
  const wanted = names.length > 0 ? fc.subarray(names) : fc.constant<string[]>([]);
  return fc
    .tuple(
      wanted,
      fc.array(fc.tuple(fc.constantFrom(...names, ...POLLUTING_KEYS), hostileValue), {
        maxLength: 2,
      }),
    )
    .chain(([keys, extra]) =>
      fc.tuple(...keys.map(() => hostileValue)).map(
        (values): Json => ({
          entries: [...keys.map((k, i): [string, Json] => [k, values[i] ?? null]), ...extra],
        }),
      ),
    );
}

/** The smallest valid body (of one branch) with one property, or one extra key, made hostile. */
function nearValid(schema: JsonSchema): fc.Arbitrary<Json> {
  return fc.constantFrom(...branchesOf(schema)).chain((branch) => {
    const base = fromPlain(minimalValid(branch));
    const entries =
      base !== null && typeof base === "object" && !Array.isArray(base) && "entries" in base
        ? base.entries
        : [];
    const names = [
      ...new Set([...entries.map(([k]) => k), ...Object.keys(branch.properties ?? {})]),
    ];
    return fc.tuple(fc.constantFrom(...names, ...POLLUTING_KEYS), hostileValue).map(
      ([name, value]): Json => ({
        entries: [...entries.filter(([k]) => k !== name), [name, value]],
      }),
    );
  });
}

/**
 * What valid-shaped content is made of: the strings that fields of free text get, and values for
 * fields whose meaning a random string would not pass (URLs, ids, patterns), by property name.
 */
export interface ContentSource {
  strings: fc.Arbitrary<string>;
  fields?: Record<string, fc.Arbitrary<Json>>;
}

const HOSTILE_STRINGS: ContentSource = { strings: hostileString };

/** A value the schema accepts by type and bounds, with hostile content: what gets past validation. */
function hostileContentOf(
  schema: JsonSchema,
  source: ContentSource,
  depth = 0,
): fc.Arbitrary<Json> {
  if (schema.enum && schema.enum.length > 0) return fc.constantFrom(...schema.enum.map(fromPlain));
  // One of several shapes (a list filter's one value or array, a 0/1 flag): any of them.
  const shapes = (schema.oneOf ?? schema.anyOf ?? []).filter((b) => b.type !== "null");
  if (!schema.type && shapes.length > 0) {
    return fc.oneof(...shapes.map((shape) => hostileContentOf(shape, source, depth)));
  }
  // A pattern (a domain) is met by the schema's own example.
  if (schema.pattern) return fromPlainArbitrary(minimalValid(schema));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "string": {
      const min = schema.minLength ?? 0;
      const max = Math.min(schema.maxLength ?? 200_000, 200_000);
      return source.strings.map((s) => {
        const cut = s.slice(0, max);
        return cut.length >= min ? cut : cut + "x".repeat(min - cut.length);
      });
    }
    case "integer":
    case "number": {
      const min = Math.ceil(
        schema.exclusiveMinimum !== undefined
          ? schema.exclusiveMinimum + 1
          : (schema.minimum ?? -(2 ** 31)),
      );
      const ceiling =
        schema.exclusiveMaximum !== undefined
          ? schema.exclusiveMaximum - 1
          : (schema.maximum ?? 2 ** 31);
      const max = Math.max(min, Math.floor(ceiling));
      return fc.oneof(fc.constantFrom(min, max), fc.integer({ min, max }));
    }
    case "boolean":
      return fc.boolean();
    case "array":
      return fc.array(
        depth < 2 ? hostileContentOf(schema.items ?? {}, source, depth + 1) : scalar,
        {
          minLength: schema.minItems ?? 0,
          maxLength: Math.min(schema.maxItems ?? 5, 5),
        },
      );
    case "object":
      return depth < 2
        ? hostileObjectOf(schema, source, depth + 1)
        : fc.constant(fromPlain(minimalValid(schema)));
    default:
      return fromPlainArbitrary(minimalValid(schema));
  }
}

const fromPlainArbitrary = (value: unknown) => fc.constant(fromPlain(value));

/** The smallest valid object with every property, required or picked, given hostile content. */
function hostileObjectOf(schema: JsonSchema, source: ContentSource, depth = 0): fc.Arbitrary<Json> {
  const properties = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const contentFor = (name: string, property: JsonSchema) => {
    const own = source.fields?.[name];
    return own && !property.pattern && !property.enum
      ? own
      : hostileContentOf(property, source, depth);
  };
  // A required property always gets content made for its meaning: the schema's bare minimum
  // (`"x"` for a URL) passes the type check but not the handler's own.
  return fc
    .tuple(
      ...properties.map(([name, p]) =>
        required.has(name)
          ? contentFor(name, p)
          : fc.option(contentFor(name, p), { nil: undefined }),
      ),
    )
    .map(
      (values): Json => ({
        entries: properties.flatMap(([name], i): Array<[string, Json]> => {
          const value = values[i];
          return value === undefined ? [] : [[name, value]];
        }),
      }),
    );
}

/**
 * A body of the schema's alternatives (or of the one at `branch`), valid by type and bounds, with
 * content from `source`: hostile strings unless told otherwise.
 */
export function hostileContent(
  schema: JsonSchema,
  source: ContentSource = HOSTILE_STRINGS,
  branch?: number,
): fc.Arbitrary<Json> {
  const branches = branchesOf(schema);
  const picked = branch === undefined ? undefined : branches[branch];
  return (picked ? fc.constant(picked) : fc.constantFrom(...branches)).chain((b) =>
    hostileObjectOf(b, source),
  );
}

/** A hostile body for a route: shaped like its schema but wrong, or anything at all. */
export function hostileBody(route: ApiRoute): fc.Arbitrary<HostileBody> {
  const schema = route.body ?? { type: "object", properties: {} };
  const json = (kind: BodyKind, arbitrary: fc.Arbitrary<Json>) =>
    fc
      .tuple(arbitrary, jsonTypes)
      .map(([value, contentType]): HostileBody => ({ kind, text: toJsonText(value), contentType }));
  const multipart = fc
    .record({
      field: fc.constantFrom("file", "text", "name", "__proto__", ""),
      bytes: fc.oneof(
        fc.uint8Array({ maxLength: 200 }),
        fc
          .constantFrom("%PDF-1.7\n%junk", "PK\u0003\u0004junk", "# Title\nplain text")
          .map((s) => new TextEncoder().encode(s)),
      ),
      filename: fc.oneof(
        fc.constantFrom("a.pdf", "a.txt", "../../etc/passwd", "a.exe", "", "ü.md", "a\u0000.txt"),
        hostileString.filter((s) => s.length < 300),
      ),
      type: fc.constantFrom("application/pdf", "text/plain", "application/octet-stream", ""),
      extra: fc.array(
        fc
          .constantFrom("name", "__proto__", "constructor")
          .map((name): [string, string] => [name, "x"]),
        { maxLength: 2 },
      ),
    })
    .map((form): HostileBody => ({ kind: "multipart", form, contentType: undefined }));
  return fc.oneof(
    { arbitrary: fc.constant<HostileBody>({ kind: "none", contentType: undefined }), weight: 1 },
    { arbitrary: json("shaped", shapedObject(schema)), weight: 4 },
    { arbitrary: json("near-valid", nearValid(schema)), weight: 4 },
    { arbitrary: json("hostile-content", hostileContent(schema)), weight: 4 },
    { arbitrary: json("any-json", hostileValue), weight: 2 },
    {
      arbitrary: fc
        .tuple(brokenJson, jsonTypes)
        .map(([text, contentType]): HostileBody => ({ kind: "broken", text, contentType })),
      weight: 2,
    },
    { arbitrary: multipart, weight: route.multipart ? 2 : 1 },
  );
}

/** The request that sends a generated body to a route, its path filled with `ids` and `query` appended. */
export async function requestOf(
  route: ApiRoute,
  method: string,
  ids: Record<string, { value: string; raw: boolean }>,
  query: string,
  body: HostileBody,
  key: string,
): Promise<RawRequest> {
  const path = route.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const id = ids[name] ?? { value: "x", raw: true };
    return id.raw ? id.value : encodeComponent(id.value);
  });
  const request: RawRequest = { method, path: `${path}${query}`, key };
  if (body.form) {
    const { field, bytes, filename, type, extra } = body.form;
    const form = new FormData();
    form.append(field, new Blob([new Uint8Array(bytes)], { type }), filename);
    for (const [name, value] of extra) form.append(name, value);
    const encoded = await multipart(form);
    return { ...request, body: encoded.body, headers: { "content-type": encoded.contentType } };
  }
  return {
    ...request,
    ...(body.text !== undefined ? { body: body.text } : {}),
    ...(body.contentType ? { headers: { "content-type": body.contentType } } : {}),
  };
}

/** Percent-encodes every byte but the unreserved ones (lone surrogates become U+FFFD, as UTF-8 must). */
export function encodeComponent(value: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(value)) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The query string of a hostile request: the route's own parameters and others, odd values. */
export function hostileQuery(route: ApiRoute): fc.Arbitrary<string> {
  const names = route.query.map((p) => p.name);
  const value = fc.oneof(
    hostileString.filter((s) => s.length < 3000),
    fc.constantFrom(
      "-1",
      "0",
      "1e400",
      "1.5",
      "0x10",
      " 5 ",
      "5abc",
      "Infinity",
      "[]",
      "{}",
      "eyJ4IjoxfQ",
      Buffer.from(JSON.stringify(`KB#${"z".repeat(1500)}`)).toString("base64url"),
      Buffer.from(JSON.stringify(`EVT#${"z".repeat(1500)}`)).toString("base64url"),
      Buffer.from(JSON.stringify(`COMP#${"\u0000".repeat(10)}`)).toString("base64url"),
      Buffer.from(JSON.stringify({ pk: "WS#other", sk: "KB#" })).toString("base64url"),
    ),
    ...route.query.flatMap((p) =>
      (p.schema.enum ?? p.schema.items?.enum ?? []).map((v) => fc.constant(String(v))),
    ),
  );
  const name = fc.oneof(
    { arbitrary: names.length > 0 ? fc.constantFrom(...names) : fc.constant("limit"), weight: 4 },
    {
      arbitrary: fc.constantFrom(
        ...POLLUTING_KEYS,
        "__proto__[polluted]",
        "constructor[prototype][polluted]",
        "limit[]",
        "cursor[$ne]",
        "api_key",
      ),
      weight: 1,
    },
  );
  return fc
    .array(fc.tuple(name, value, fc.boolean()), { maxLength: 4 })
    .map((pairs) =>
      pairs.length === 0
        ? ""
        : `?${pairs
            .map(([k, v, raw]) =>
              raw && !/[#\s%]/.test(v) && v.length < 100
                ? `${k}=${v}`
                : `${encodeComponent(k)}=${encodeComponent(v)}`,
            )
            .join("&")}`,
    );
}

/**
 * A value for a path parameter: odd, traversing, an id of another kind, or (when given) a real id
 * or one of the values the parameter accepts (a module name), so hostile bodies reach handlers.
 */
export function hostileId(
  real: string[] = [],
  accepted: string[] = [],
): fc.Arbitrary<{ value: string; raw: boolean }> {
  const prefixes = idPrefixes();
  const encoded = (arb: fc.Arbitrary<string>) => arb.map((value) => ({ value, raw: false }));
  const raw = (...values: string[]) =>
    fc.constantFrom(...values.map((value) => ({ value, raw: true })));
  const options = [
    raw(
      ".",
      "..",
      "%2e%2e",
      "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
      "..%2f..%2fopenapi.json",
      "..%5c..%5c",
      "%00",
      "%ff",
      "%",
      "%%32%65",
      "a%2Fb",
      "%252e%252e",
      "%u002e",
    ),
    encoded(
      fc.constantFrom(
        "../../etc/passwd",
        "..\\..\\",
        "search",
        "crawl",
        "check-all",
        "uploads",
        "reindex",
        "null",
        "undefined",
        "0",
        "-1",
        "[object Object]",
        ...POLLUTING_KEYS,
        ...prefixes.map(unknownId),
        ...prefixes.map((p) => unknownId(p).toLowerCase()),
        ...prefixes.map((p) => `${unknownId(p)}X`),
        ...prefixes.map((p) => `${p}${"0".repeat(26)}`),
        ...prefixes.map((p) => `${p}\u0000${"A".repeat(25)}`),
      ),
    ),
    encoded(hostileString.filter((s) => s.length > 0 && s.length <= 4000)),
    encoded(fc.constantFrom(2000, 4000).map((n) => "k".repeat(n))),
    encoded(
      fc
        .tuple(fc.constantFrom(...prefixes, "kb_", "ws_", "key_"), fc.string({ maxLength: 30 }))
        .map(([p, s]) => p + s),
    ),
  ];
  if (real.length > 0) {
    const mutate = (id: string) => [
      id,
      id.toLowerCase(),
      `${id} `,
      `${id}/`,
      id.slice(0, -1),
      `${id}%00`,
    ];
    options.push(encoded(fc.constantFrom(...real)), raw(...real.flatMap(mutate)));
  }
  if (accepted.length > 0) {
    // Mostly a value the route accepts: the body is what is being fuzzed then.
    const valid = encoded(fc.constantFrom(...accepted));
    return fc.oneof({ arbitrary: valid, weight: 3 * options.length }, ...options);
  }
  return fc.oneof(...options);
}
