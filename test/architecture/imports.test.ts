import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { transformSync } from "esbuild";
import { describe, expect, it } from "vitest";
import {
  apiFunctions,
  invokedFunctions,
  queueWorkers,
  scheduledFunctions,
} from "../../functions/manifest.js";

/**
 * The layering rules of CONTRIBUTING.md ("Layering"), read from the import statements themselves:
 * no import circles anywhere, `lib/` imports nothing above it, only `lib/store/` speaks the AWS
 * SDK, and only `lib/http/` knows Lambda events.
 */
const root = resolve(import.meta.dirname, "../..");

function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter(
      (entry) => entry.isFile() && /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith(".d.ts"),
    )
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

const IMPORT = /^\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']/gm;
const DYNAMIC = /import\(\s*["']([^"']+)["']\s*\)/g;

/** Every import of a file: relative ones resolved to repository paths, packages as written. */
function importsOf(file: string): { local: string[]; packages: string[] } {
  const text = readFileSync(join(root, file), "utf8");
  const specifiers = [...text.matchAll(IMPORT), ...text.matchAll(DYNAMIC)].map(
    (m) => m[1] as string,
  );
  const local: string[] = [];
  const packages: string[] = [];
  for (const spec of specifiers) {
    if (spec.startsWith(".")) {
      local.push(relative(root, resolve(root, dirname(file), spec)).replace(/\.js$/, ".ts"));
    } else packages.push(spec);
  }
  return { local, packages };
}

const files = [...sourceFiles("lib"), ...sourceFiles("functions"), ...sourceFiles("infra")];
const graph = new Map(files.map((file) => [file, importsOf(file)]));

describe("the import graph", () => {
  it("has no circles", () => {
    const circles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const walk = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        circles.push([...path.slice(path.indexOf(file)), file].join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const next of graph.get(file)?.local ?? []) {
        if (graph.has(next)) walk(next, [...path, file]);
      }
      state.set(file, "done");
    };
    for (const file of graph.keys()) walk(file, []);
    expect(circles).toEqual([]);
  });

  it("keeps lib/ below functions/ and infra/", () => {
    const upward = [...graph]
      .filter(([file]) => file.startsWith("lib/"))
      .flatMap(([file, { local }]) =>
        local.filter((to) => !to.startsWith("lib/")).map((to) => `${file} -> ${to}`),
      );
    expect(upward).toEqual([]);
  });

  it("lets only lib/store speak the AWS SDK", () => {
    const sdk = [...graph]
      .filter(([file]) => file.startsWith("lib/") && !file.startsWith("lib/store/"))
      .flatMap(([file, { packages }]) =>
        packages.filter((p) => p.startsWith("@aws-sdk/")).map((p) => `${file} -> ${p}`),
      );
    expect(sdk).toEqual([]);
  });

  it("keeps Lambda event types out of the domain", () => {
    const lambda = [...graph]
      .filter(([file]) => file.startsWith("lib/") && !file.startsWith("lib/http/"))
      .flatMap(([file]) =>
        /from\s+["']aws-lambda["']/.test(readFileSync(join(root, file), "utf8")) ? [file] : [],
      );
    expect(lambda).toEqual([]);
  });

  it("deploys every function file: each is an entry of the manifest, and each entry a file", () => {
    const entries = [
      ...apiFunctions,
      ...queueWorkers,
      ...scheduledFunctions,
      ...invokedFunctions,
    ].map((f) => f.entry);
    const handlers = sourceFiles("functions").filter((file) => file !== "functions/manifest.ts");
    expect(handlers.sort()).toEqual([...entries].sort());
  });
});

/**
 * The naming convention of capability folders: a folder with an HTTP contract (`contract.ts`: the
 * schemas, route definitions and the list `<name>Contract` the manifest mounts) has its Hono
 * handlers beside it (`routes.ts`: `<name>Routes(deps)`, the module app) and a README.md.
 */
/**
 * A folder's `index.ts` lists the folder's public surface and nothing else: once comments and
 * types are stripped, every statement left re-exports from a file of the folder (or its store).
 */
describe("index files", () => {
  const indexes = files.filter((file) => file.startsWith("lib/") && file.endsWith("/index.ts"));

  it("exist where a folder has a public surface", () => {
    expect(indexes).toEqual(expect.arrayContaining(["lib/search/index.ts"]));
  });

  it.each(indexes)("%s only re-exports", (file) => {
    const code = transformSync(readFileSync(join(root, file), "utf8"), {
      loader: "ts",
      legalComments: "none",
    }).code;
    const statements = code
      .split(";")
      .map((statement) => statement.replace(/\s+/g, " ").trim())
      .filter(Boolean);
    const other = statements.filter(
      (statement) => !/^export (\*|\{[^}]*\}) from "[^"]+"$/.test(statement),
    );
    expect(other).toEqual([]);
  });
});

describe("capability folders", () => {
  const folders = [
    "lib",
    ...readdirSync(join(root, "lib"), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => relative(root, join(entry.parentPath, entry.name))),
  ];
  const capabilities = folders.filter((folder) => existsSync(join(root, folder, "contract.ts")));

  it("exist", () => {
    expect(capabilities).toEqual(expect.arrayContaining(["lib/knowledge/sources", "lib/limits"]));
  });

  it("each hold contract.ts, routes.ts and a README.md", () => {
    const missing = capabilities.flatMap((folder) =>
      ["routes.ts", "README.md"]
        .filter((file) => !existsSync(join(root, folder, file)))
        .map((file) => `${folder}/${file}`),
    );
    expect(missing).toEqual([]);
  });

  it("export `<name>Contract` from contract.ts and `<name>Routes` from routes.ts", () => {
    const broken = capabilities.flatMap((folder) => {
      const read = (file: string) => readFileSync(join(root, folder, file), "utf8");
      const contract = /^export const (\w+)Contract\b/m.exec(read("contract.ts"))?.[1];
      const routes = /^export function (\w+)Routes\(/m.exec(read("routes.ts"))?.[1];
      return contract && contract === routes
        ? []
        : [`${folder}: ${contract}Contract, ${routes}Routes`];
    });
    expect(broken).toEqual([]);
  });

  it("leave no api.ts under lib/ (the handlers are routes.ts)", () => {
    // lib/console/app/ is the browser code, whose api.ts is the client of the public API.
    const apis = sourceFiles("lib").filter(
      (file) => /(^|\/)api\.ts$/.test(file) && !file.startsWith("lib/console/app/"),
    );
    expect(apis).toEqual([]);
  });
});

/**
 * One writer per record kind, conditions built in lib/store (issue 24). A write's condition is
 * named by its domain and built from the parts of `lib/store/conditions.ts`; DynamoDB's expression
 * language is written in `lib/store/` only. The records of the knowledge base are written by
 * their writer alone: the other modules call its transitions. Read from each file's code as
 * esbuild emits it, so comments and types never count.
 */
describe("table writes", () => {
  const code = new Map(
    sourceFiles("lib").map((file) => [
      file,
      transformSync(readFileSync(join(root, file), "utf8"), {
        loader: "ts",
        legalComments: "none",
      }).code,
    ]),
  );
  /** A call of one of the table's writes, on whatever holds it (`table`, `this.deps.table`). */
  const WRITE = /\btable\s*\.\s*(update|change|put|delete|create|increment|decrement)\s*\(/;
  /** An expression property, an attribute function, or a comparison with a `:value` placeholder. */
  const RAW_CONDITION = /\bexpression\s*:|attribute_(not_)?exists\(|(=|<>|<=|>=|<|>)\s*:[A-Za-z_]/;

  /** Each writer file of lib/knowledge and the records it alone writes. */
  const KNOWLEDGE_WRITERS: Record<string, string> = {
    "lib/knowledge/sources/records.ts": "sources (KB#) and the searchable-set counter (KBGEN)",
    "lib/knowledge/sources/url-claims.ts": "URL claims (KBURL#)",
    "lib/knowledge/crawl/records.ts": "crawls (CRAWL#), their counters and index slots",
    "lib/knowledge/crawl/frontier.ts": "crawl pages (CRAWLPAGE#) and query variants (CRAWLPATH#)",
    "lib/knowledge/crawl/content-claims.ts": "content claims (CRAWLHASH#)",
    "lib/knowledge/crawl/host-pace.ts": "host paces (CRAWLHOST#)",
  };
  /** The modules that export the source record: who imports them must not write the table. */
  const SOURCE_RECORD = ["lib/knowledge/sources/records.ts", "lib/knowledge/sources/sources.ts"];

  it("writes no condition expression outside lib/store", () => {
    const raw = [...code]
      .filter(([file]) => !file.startsWith("lib/store/"))
      .flatMap(([file, text]) =>
        text
          .split("\n")
          .filter((line) => RAW_CONDITION.test(line))
          .map((line) => `${file}: ${line.trim()}`),
      );
    expect(raw).toEqual([]);
  });

  it("names every writer of the knowledge base that exists", () => {
    expect(Object.keys(KNOWLEDGE_WRITERS).filter((file) => !code.has(file))).toEqual([]);
  });

  it("lets only a record's writer write the knowledge base's records", () => {
    const writers = [...code]
      .filter(([file, text]) => file.startsWith("lib/knowledge/") && WRITE.test(text))
      .map(([file]) => file)
      .filter((file) => !(file in KNOWLEDGE_WRITERS));
    expect(writers).toEqual([]);
  });

  it("lets only SourceRecords write a source: no module that knows the record writes the table", () => {
    const writers = [...code]
      .filter(([file]) => !file.startsWith("lib/store/") && !SOURCE_RECORD.includes(file))
      .filter(([file]) => graph.get(file)?.local.some((to) => SOURCE_RECORD.includes(to)))
      .filter(([, text]) => WRITE.test(text))
      .map(([file]) => file);
    expect(writers).toEqual([]);
    // sources.ts re-exports the record for its readers: it writes nothing itself.
    expect(WRITE.test(code.get("lib/knowledge/sources/sources.ts") ?? "")).toBe(false);
  });
});
