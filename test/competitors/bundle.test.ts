import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiFunctions } from "../../functions/manifest.js";
import { bundleFunction } from "../../infra/aws/bundle.js";
import { pageReader } from "../../lib/competitors/page-reader.js";
import { MemoryBudget } from "../../lib/files/budget.js";
import { Sandbox, workerScript } from "../../lib/files/sandbox.js";
import { htmlPage } from "../support/sites.js";

/**
 * An API check reads the competitor's pages in sandbox threads, which load their script from
 * beside the function's bundle (infra/aws/bundle.ts): the competitors API must have it, and the
 * bundled thread must do the reading. (The check worker's bundle is built the same way.)
 */

const HOME = htmlPage(
  "Acme",
  '<h1>Ship sites faster</h1><p>Acme hosts your pages.</p><a href="/plans">Plans</a>',
);

let out: string;

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), "competitor-bundles-"));
});
afterAll(() => rm(out, { recursive: true, force: true }));

describe("the bundled competitors API", () => {
  it("reads a competitor's homepage in the sandbox thread built beside it", async () => {
    const fn = apiFunctions.find(({ name }) => name === "competitors-api");
    if (!fn) throw new Error("The manifest has no competitors-api");
    const { dir } = await bundleFunction(fn, out, false);
    expect(existsSync(join(dir, "parse-worker.mjs"))).toBe(true);
    const script = workerScript(pathToFileURL(join(dir, "index.mjs")).href);
    const read = pageReader(undefined, new Sandbox(new MemoryBudget(512), script));
    expect(await read("home", "https://acme.example/", HOME)).toEqual({
      url: "https://acme.example/",
      candidates: {
        pricing: ["https://acme.example/plans", "https://acme.example/pricing"],
        careers: ["https://acme.example/careers", "https://acme.example/jobs"],
        blog: ["https://acme.example/blog"],
      },
      boards: [],
      feeds: [],
      messaging: { headline: "Ship sites faster", claims: ["Acme hosts your pages."] },
      name: null,
    });
  }, 120_000);
});
