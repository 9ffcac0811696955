import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { apiFunctions } from "../../../functions/manifest.js";
import {
  bundleFunction,
  fetchPlatformPackages,
  missingPlatformPackages,
  type PlatformCache,
  REPO_ROOT,
} from "../../../infra/aws/bundle.js";

// A synth fetches the functions' linux-arm64 binaries at first use; `npm install` does not. No
// test here reaches the npm registry: a fake one on a local port serves a stand-in package, pinned
// by a copy of the lockfile that names the stand-in's integrity; a closed port, tried once, is
// the registry unreachable.
const SEARCH_ENGINE_BINARY = "@lancedb/lancedb-linux-arm64-gnu";
const BINARY_FILE = "lancedb.linux-arm64-gnu.node";
const onLambdaPlatform = process.platform === "linux" && process.arch === "arm64";
const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version: string; integrity?: string }>;
};
const VERSION = lock.packages[`node_modules/${SEARCH_ENGINE_BINARY}`]?.version ?? "";
const SPEC = `${SEARCH_ENGINE_BINARY}@${VERSION}`;

const out = await mkdtemp(join(tmpdir(), "platform-packages-"));
afterAll(() => rm(out, { recursive: true, force: true }));
const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
  vi.restoreAllMocks();
});

const integrityOf = (bytes: Buffer) =>
  `sha512-${createHash("sha512").update(bytes).digest("base64")}`;

/** A stand-in for the search engine's binary package, packed as npm packs: its tarball. */
async function standInTarball(at: string, binary: string): Promise<Buffer> {
  const dir = join(at, "package");
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({ name: SEARCH_ENGINE_BINARY, version: VERSION, os: ["linux"], cpu: ["arm64"] }),
  );
  await writeFile(join(dir, BINARY_FILE), binary);
  execFileSync("tar", ["-czf", join(at, "package.tgz"), "-C", at, "package"]);
  return readFile(join(at, "package.tgz"));
}

/**
 * A registry on a local port that serves `tarball` as the binary package, and a cache folder
 * pinned by a copy of the lockfile whose entry for it has `pinnedIntegrity`. Points npm at that
 * registry, with an npm cache of its own (the machine's might hold the real package).
 */
async function fakeRegistry(tarball: Buffer, pinnedIntegrity = integrityOf(tarball)) {
  const at = await mkdtemp(join(out, "registry-"));
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? "");
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url?.endsWith(".tgz")) return res.end(tarball);
    if (decodeURIComponent(req.url ?? "") !== `/${SEARCH_ENGINE_BINARY}`) {
      res.statusCode = 404;
      return res.end("{}");
    }
    res.setHeader("content-type", "application/json");
    res.end(
      JSON.stringify({
        name: SEARCH_ENGINE_BINARY,
        "dist-tags": { latest: VERSION },
        versions: {
          [VERSION]: {
            name: SEARCH_ENGINE_BINARY,
            version: VERSION,
            os: ["linux"],
            cpu: ["arm64"],
            dist: { tarball: `${origin}/package.tgz`, integrity: integrityOf(tarball) },
          },
        },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const pinned = structuredClone(lock);
  const entry = pinned.packages[`node_modules/${SEARCH_ENGINE_BINARY}`];
  if (!entry) throw new Error(`${SEARCH_ENGINE_BINARY} is not in package-lock.json`);
  entry.integrity = pinnedIntegrity;
  await writeFile(join(at, "package-lock.json"), JSON.stringify(pinned));
  Object.assign(process.env, {
    npm_config_registry: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    npm_config_cache: join(at, "npm-cache"),
    npm_config_fetch_retries: "0",
  });
  const cache: PlatformCache = { dir: join(at, "cache"), lockfile: join(at, "package-lock.json") };
  return { cache, requests };
}

const unreachable = () =>
  Object.assign(process.env, { npm_config_registry: "http://127.0.0.1:9/" });

/** What the bundler said on stderr while `run` ran. */
async function said(run: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, "error").mockImplementation((line: unknown) => {
    lines.push(String(line));
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return lines;
}

describe("the functions' platform packages", () => {
  it("are the search engine's linux-arm64 binary, which npm installs only on linux-arm64", () => {
    expect(missingPlatformPackages()).toEqual(onLambdaPlatform ? [] : [SEARCH_ENGINE_BINARY]);
  });

  it("are not fetched by npm install: no install script", () => {
    const { scripts } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    for (const hook of ["preinstall", "install", "postinstall", "prepare"]) {
      expect(scripts).not.toHaveProperty(hook);
    }
  });

  it.skipIf(onLambdaPlatform)(
    "are fetched by the first bundle that needs them, with one line, then reused offline",
    async () => {
      const { cache, requests } = await fakeRegistry(
        await standInTarball(await mkdtemp(join(out, "package-")), "the binary"),
      );
      const fn = apiFunctions.find((f) => f.nodeModules?.includes("@lancedb/lancedb"));
      if (!fn) throw new Error("no function installs the search engine");
      let dir = "";
      const first = await said(async () => {
        ({ dir } = await bundleFunction(fn, out, true, cache));
      });
      expect(first).toEqual([
        expect.stringMatching(
          new RegExp(`^kb-intel: fetching ${SPEC}, .*linux-arm64.* into ${cache.dir} \\(once`),
        ),
      ]);
      expect(requests.length).toBeGreaterThan(0);
      const engine = join(dir, "node_modules", "@lancedb");
      expect(readdirSync(engine).sort()).toEqual(["lancedb", "lancedb-linux-arm64-gnu"]);
      expect(readFileSync(join(engine, "lancedb-linux-arm64-gnu", BINARY_FILE), "utf8")).toBe(
        "the binary",
      );
      expect(readdirSync(cache.dir)).toEqual(["@lancedb"]); // nothing of the fetch left beside it

      unreachable();
      const again = await said(async () => {
        expect(await fetchPlatformPackages(cache)).toEqual([]);
      });
      expect(again).toEqual([]);
    },
    120_000,
  );

  it.skipIf(onLambdaPlatform)(
    "are refused if the registry's bytes are not the lockfile's, leaving nothing in the cache",
    async () => {
      const tarball = await standInTarball(await mkdtemp(join(out, "package-")), "the binary");
      const { cache, requests } = await fakeRegistry(tarball, integrityOf(Buffer.from("other")));
      const lines = await said(() =>
        expect(fetchPlatformPackages(cache)).rejects.toThrow(
          `${SPEC} does not match package-lock.json's integrity`,
        ),
      );
      expect(lines).toHaveLength(1);
      expect(requests.length).toBeGreaterThan(0);
      expect(readdirSync(cache.dir)).toEqual([]);
    },
  );

  it.skipIf(onLambdaPlatform)(
    "stop the synth with the reason if the registry is unreachable, leaving nothing half fetched",
    async () => {
      const { cache } = await fakeRegistry(Buffer.from(""));
      unreachable();
      await said(() =>
        expect(fetchPlatformPackages(cache)).rejects.toThrow(
          new RegExp(`could not fetch ${SPEC} .*ECONNREFUSED.*needs the npm registry once`),
        ),
      );
      expect(readdirSync(cache.dir)).toEqual([]);
    },
  );
});
