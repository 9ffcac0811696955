// Mutation testing (`npm run mutate`, see bench/mutate.ts and docs/testing.md "Mutation testing").
// Stryker changes one line at a time in the modules where a wrong line is a security or money bug
// and runs the tests that cover it; a change no test notices is a hole in the tests.
import { readFileSync } from "node:fs";

/**
 * The lines of `file` from the one containing `from` up to (not including) the next one
 * containing `to`, as a Stryker mutation range. Found by text, not by number, so other changes to
 * the file do not move the range; a marker that is gone fails the run instead of mutating nothing.
 */
function span(file, from, to) {
  const lines = readFileSync(file, "utf8").split("\n");
  const start = lines.findIndex((line) => line.includes(from));
  const end = lines.findIndex((line, i) => i > start && line.includes(to));
  if (start < 0 || end < 0) throw new Error(`${file}: cannot find "${from}" then "${to}"`);
  return `${file}:${start + 1}-${end}`;
}

/** Each module: the code mutated and the tests that must notice. Run one at a time. */
export const modules = {
  severity: {
    mutate: ["lib/competitors/severity.ts"],
    testFiles: ["test/competitors/severity.test.ts"],
  },
  keys: {
    mutate: ["lib/auth/keys.ts", "lib/http/auth.ts"],
    testFiles: ["test/auth/keys.test.ts", "test/http/auth.test.ts"],
  },
  ssrf: {
    // The static check of a URL, and the check of every address a host resolves to.
    mutate: [
      "lib/web/address.ts",
      span("lib/web/url.ts", "export function privateAllowed", "/** Query parameters"),
      span("lib/web/fetch.ts", "  check(input", "  private hop("),
      span("lib/web/fetch.ts", "  private guardedLookup(", "function absolute("),
    ],
    testFiles: [
      "test/web/address.test.ts",
      "test/web/url.test.ts",
      "test/web/fetch.test.ts",
      "test/web/ssrf.test.ts",
    ],
  },
  crawl: {
    mutate: [
      "lib/knowledge/crawl/records.ts",
      "lib/knowledge/crawl/frontier.ts",
      "lib/knowledge/crawl/content-claims.ts",
      "lib/knowledge/crawl/host-pace.ts",
    ],
    // The state machine's own tests, one transition each. crawl.test.ts runs whole crawls, most
    // in a beforeAll, which would make every mutant rerun every test there (an hour here).
    testFiles: ["test/knowledge/crawl-store.test.ts"],
  },
  quotas: {
    mutate: ["lib/limits/quotas.ts", "lib/limits/rate-limit.ts"],
    testFiles: ["test/limits/*.test.ts"],
  },
};

const name = process.env.MUTATE_MODULE ?? "severity";
const chosen = modules[name];
if (!chosen) throw new Error(`MUTATE_MODULE=${name}: not one of ${Object.keys(modules)}`);

// Read by vitest.mutate.config.ts in Stryker's test runner processes, which inherit it.
process.env.MUTATE_TESTS = chosen.testFiles.join(",");

export default {
  $schema: "./node_modules/@stryker-mutator/core/schema/stryker-schema.json",
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutate.config.ts", related: false },
  coverageAnalysis: "perTest",
  // Two cores shared with other work: one test runner beside Stryker itself.
  concurrency: 1,
  // Tests speak to emulators and HTTP servers; a busy machine must not turn slowness into kills.
  timeoutMS: 15_000,
  mutate: chosen.mutate,
  reporters: ["html", "json", "clear-text", "progress"],
  htmlReporter: { fileName: `bench/mutation/${name}.html` },
  jsonReporter: { fileName: `bench/mutation/${name}.json` },
  clearTextReporter: { logTests: false, reportTests: false },
  // Stryker rewrites tsconfig.json's `extends` and `references` for its sandbox through the
  // TypeScript JS API, which TypeScript 7 no longer has; ours has neither, so it names no file.
  tsconfigFile: "no-tsconfig-to-rewrite.json",
  tempDirName: `.stryker-tmp/${name}`,
  cleanTempDir: "always",
  ignorePatterns: ["/.data", "/cdk.out", "/coverage", "/bench", "/.stryker-tmp"],
  thresholds: { high: 90, low: 80, break: null },
};
