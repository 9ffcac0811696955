import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BuildOptions, build, type Plugin } from "esbuild";
import { apiFunctions, queueWorkers, scheduledFunctions } from "../functions/manifest.js";

export const REPO_ROOT = join(import.meta.dirname, "..");

/**
 * zod's namespace export carries every locale (about 250 KB minified) although only English is
 * used; `@hono/zod-openapi` passes the namespace around as a value, so esbuild cannot shake them
 * out. The plugin answers the locale index with an empty module; `en` is imported directly.
 */
const onlyEnglishZodLocales: Plugin = {
  name: "only-english-zod-locales",
  setup(b) {
    b.onResolve({ filter: /[\\/]locales[\\/]index\.js$/ }, (args) =>
      /[\\/]zod[\\/]/.test(args.importer) ? { path: "zod-locales", namespace: "stub" } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "stub" }, () => ({ contents: "export {};", loader: "js" }));
  },
};

/** How every function is bundled: ESM for Node 22, minified, the AWS SDK v3 left to the runtime. */
export function bundleOptions(
  entry: string,
  outfile: string,
  external: string[] = [],
): BuildOptions {
  return {
    entryPoints: [join(REPO_ROOT, entry)],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    minify: true,
    sourcemap: true,
    mainFields: ["module", "main"],
    external: ["@aws-sdk/*", ...external],
    // Some dependencies are CommonJS and call require(); give the ESM bundle one.
    banner: {
      js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);",
    },
    plugins: [onlyEnglishZodLocales],
    metafile: true,
    logLevel: "warning",
  };
}

export interface BundleRequest {
  name: string;
  entry: string;
  /** Packages installed beside the bundle instead of bundled (ones that read files at run time). */
  nodeModules?: string[];
}

export interface BundleResult {
  name: string;
  dir: string;
  /** Size of the minified `index.mjs`, in bytes. */
  bytes: number;
  /** Every source file that went into the bundle. */
  inputs: string[];
}

function installedVersion(pkg: string): string {
  const manifest = JSON.parse(
    readFileSync(join(REPO_ROOT, "node_modules", pkg, "package.json"), "utf8"),
  ) as { version: string };
  return manifest.version;
}

/**
 * Bundles one function into `{outRoot}/{name}/index.mjs`. Its `nodeModules` are installed next
 * to it at the versions this checkout uses, unless `installNodeModules` is false (tests that only
 * read the template).
 */
export async function bundleFunction(
  request: BundleRequest,
  outRoot: string,
  installNodeModules = true,
): Promise<BundleResult> {
  const dir = join(outRoot, request.name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, "index.mjs");
  const modules = request.nodeModules ?? [];
  const result = await build(bundleOptions(request.entry, outfile, modules));
  if (modules.length > 0 && installNodeModules) {
    const dependencies = Object.fromEntries(modules.map((m) => [m, installedVersion(m)]));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", dependencies }));
    execFileSync("npm", ["install", "--omit=dev", "--no-audit", "--no-fund", "--ignore-scripts"], {
      cwd: dir,
      stdio: "ignore",
    });
  }
  return {
    name: request.name,
    dir,
    bytes: statSync(outfile).size,
    inputs: Object.keys(result.metafile?.inputs ?? {}),
  };
}

/** Every function of the manifest, bundled; answers each one's folder by function name. */
export async function bundleAll(
  outRoot: string,
  installNodeModules = true,
): Promise<Map<string, BundleResult>> {
  const results = new Map<string, BundleResult>();
  for (const fn of [...apiFunctions, ...queueWorkers, ...scheduledFunctions]) {
    results.set(fn.name, await bundleFunction(fn, outRoot, installNodeModules));
  }
  return results;
}
