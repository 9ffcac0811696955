import { defineConfig } from "vitest/config";
import base from "./vitest.config.js";

/**
 * The test config of a mutation run (stryker.config.mjs): the usual one, with only the tests of
 * the module being mutated, named in MUTATE_TESTS. Stryker's own `testFiles` option would select
 * them too, but with it Stryker 9.6 turns a mutant of module-level code on only after the module
 * has loaded, so such a mutant survives whatever the tests say (stryker-js issue 6144).
 */
const include = process.env.MUTATE_TESTS?.split(",").filter(Boolean) ?? [];
if (include.length === 0) throw new Error("MUTATE_TESTS names no test files: run npm run mutate");

export default defineConfig({ ...base, test: { ...base.test, include } });
