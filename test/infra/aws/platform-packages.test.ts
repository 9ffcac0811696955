import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiFunctions } from "../../../functions/manifest.js";
import { bundleFunction, missingPlatformPackages, REPO_ROOT } from "../../../infra/aws/bundle.js";

// `npm install` fetches the functions' linux-arm64 binaries (the postinstall script), so a synth
// needs no network. The registry here is a closed port, tried once: any `npm pack` would fail.
const UNREACHABLE = { npm_config_registry: "http://127.0.0.1:9", npm_config_fetch_retries: "0" };
const SEARCH_ENGINE_BINARY = "@lancedb/lancedb-linux-arm64-gnu";
const onLambdaPlatform = process.platform === "linux" && process.arch === "arm64";

const out = await mkdtemp(join(tmpdir(), "platform-packages-"));
afterAll(() => rm(out, { recursive: true, force: true }));
const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

describe("the functions' platform packages", () => {
  it("are the search engine's linux-arm64 binary, which npm installs only on linux-arm64", () => {
    expect(missingPlatformPackages()).toEqual(onLambdaPlatform ? [] : [SEARCH_ENGINE_BINARY]);
  });

  it("are in place after npm install: a bundle gets its binary with the registry unreachable", async () => {
    Object.assign(process.env, UNREACHABLE);
    const fn = apiFunctions.find((f) => f.nodeModules?.includes("@lancedb/lancedb"));
    if (!fn) throw new Error("no function installs the search engine");
    const { dir } = await bundleFunction(fn, out);
    const engine = join(dir, "node_modules", "@lancedb");
    expect(readdirSync(engine).sort()).toEqual(["lancedb", "lancedb-linux-arm64-gnu"]);
    expect(
      existsSync(join(engine, "lancedb-linux-arm64-gnu", "lancedb.linux-arm64-gnu.node")),
    ).toBe(true);
  });

  it("never fail the install: unreachable, the postinstall script warns and exits 0", async () => {
    const cache = join(out, "empty-cache");
    const run = promisify(execFile)(
      join(REPO_ROOT, "node_modules", ".bin", "tsx"),
      ["infra/aws/fetch-platform-packages.ts", cache],
      { cwd: REPO_ROOT, env: { ...process.env, ...UNREACHABLE } },
    );
    const { stderr } = await run; // rejects on a non-zero exit
    if (onLambdaPlatform) return;
    expect(stderr.trim().split("\n")).toEqual([
      expect.stringMatching(`could not fetch ${SEARCH_ENGINE_BINARY}@.*cdk synth will fetch`),
    ]);
    expect(readdirSync(cache)).toEqual([]); // no tarball, nothing half unpacked
  });
});
