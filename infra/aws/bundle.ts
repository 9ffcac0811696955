import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BuildOptions, build, type Plugin } from "esbuild";
import { apiFunctions, queueWorkers, scheduledFunctions } from "../../functions/manifest.js";
import { VIEWER_FILE, viewerSource } from "../../lib/http/docs.js";

export const REPO_ROOT = join(import.meta.dirname, "../..");

/**
 * zod's namespace export carries features this service never calls: every locale (about 250 KB
 * minified) though only English is used, `z.compile` and `z.fromJSONSchema`. `@hono/zod-openapi`
 * passes the namespace around as a value, so esbuild cannot shake them out; this plugin answers
 * those modules with stand-ins that export the same names and throw if ever called.
 */
const unused = (name: string) => `function(){throw new Error("${name} is not bundled")}`;
const ZOD_STAND_INS: Array<{ path: RegExp; contents: string }> = [
  { path: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/, contents: "export {};" },
  {
    path: /[\\/]zod[\\/]v4[\\/]core[\\/]compile\.js$/,
    contents: [
      `export const INVALID = Symbol.for("zod.compile.invalid");`,
      "export class ZodCompileAsyncError extends Error {}",
      "export class ZodCompileUnsupportedError extends Error {}",
      `export const compile = ${unused("z.compile")};`,
      `export const withParser = ${unused("z.withParser")};`,
      `export const compileFn = ${unused("compileFn")};`,
    ].join("\n"),
  },
  {
    path: /[\\/]zod[\\/]v4[\\/]classic[\\/]from-json-schema\.js$/,
    contents: `export const fromJSONSchema = ${unused("z.fromJSONSchema")};`,
  },
];

const zodStandIns: Plugin = {
  name: "zod-stand-ins",
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/].*\.js$/ }, (args) => {
      const standIn = ZOD_STAND_INS.find((s) => s.path.test(args.path));
      return standIn ? { contents: standIn.contents, loader: "js" } : undefined;
    });
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
    plugins: [zodStandIns],
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
  const inputs = Object.keys(result.metafile?.inputs ?? {});
  if (inputs.some((input) => input.endsWith("lib/files/sandbox.ts"))) {
    // Files are parsed and pages read in sandbox threads, which load their script from beside the
    // bundle (jsdom, in `modules`, stays out of both and is installed beside them).
    await build({
      ...bundleOptions("lib/files/parse-worker.ts", join(dir, "parse-worker.mjs"), modules),
      metafile: false,
    });
  }
  if (inputs.some((input) => input.endsWith("lib/http/docs.ts"))) {
    // The API reference serves its viewer (Scalar's prebuilt bundle) from beside the bundle.
    copyFileSync(viewerSource(), join(dir, VIEWER_FILE));
  }
  if (modules.length > 0 && installNodeModules) {
    const dependencies = Object.fromEntries(modules.map((m) => [m, installedVersion(m)]));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", dependencies }));
    // For the functions' platform (arm64 Linux), whatever this machine is: native packages pick
    // their binary by it.
    const platform = ["--os=linux", "--cpu=arm64", "--libc=glibc"];
    execFileSync(
      "npm",
      ["install", "--omit=dev", "--no-audit", "--no-fund", "--ignore-scripts", ...platform],
      { cwd: dir, stdio: "ignore" },
    );
  }
  return {
    name: request.name,
    dir,
    bytes: statSync(outfile).size,
    inputs,
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
