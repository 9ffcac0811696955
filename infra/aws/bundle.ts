import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import { promisify } from "node:util";
import { type BuildOptions, build, type Plugin } from "esbuild";
import {
  apiFunctions,
  invokedFunctions,
  queueWorkers,
  scheduledFunctions,
} from "../../functions/manifest.js";
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

/**
 * How every function is bundled: ESM for Node 22, minified, the AWS SDK v3 inside (the version
 * tested, tree-shaken; the runtime's own is older, and loading it was slower: see
 * test/infra/aws/stack.test.ts).
 */
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
    external,
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

/** The functions' platform: native packages are chosen for it, whatever this machine is. */
const LAMBDA_PLATFORM = { os: "linux", cpu: "arm64", libc: "glibc" } as const;

interface PackageJson {
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  os?: string[];
  cpu?: string[];
  libc?: string[];
}

const readJson = <T>(path: string) => JSON.parse(readFileSync(path, "utf8")) as T;

/** Whether a package declaring `os`/`cpu`/`libc` runs on the functions' platform. */
const runsOnLambda = (pkg: Pick<PackageJson, "os" | "cpu" | "libc">) =>
  (["os", "cpu", "libc"] as const).every(
    (field) => !pkg[field] || pkg[field].includes(LAMBDA_PLATFORM[field]),
  );

/** Where Node would find `name` from a package in `dir`: its node_modules, then its parents'. */
function resolvePackage(dir: string, name: string): string | undefined {
  for (let at = dir; at.startsWith(REPO_ROOT); at = dirname(at)) {
    const candidate = join(at, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
  }
  return undefined;
}

/**
 * Where the native packages for the functions' platform that npm did not install on this machine
 * are kept once fetched (`dir`), and the lockfile that pins their version and integrity.
 */
export interface PlatformCache {
  dir: string;
  lockfile: string;
}

/** This checkout's: `node_modules/.cache/kb-intel-lambda`, pinned by `package-lock.json`. */
export const PLATFORM_CACHE: PlatformCache = {
  dir: join(REPO_ROOT, "node_modules", ".cache", "kb-intel-lambda"),
  lockfile: join(REPO_ROOT, "package-lock.json"),
};

/** The lockfile's entry of a top-level package: its version, integrity and platform. */
function pinned(
  name: string,
  lockfile = PLATFORM_CACHE.lockfile,
): (PackageJson & { integrity?: string }) | undefined {
  const lock = readJson<{ packages: Record<string, PackageJson & { integrity?: string }> }>(
    lockfile,
  );
  return lock.packages[`node_modules/${name}`];
}

/** The one line of npm's error output that says what went wrong (its code, else its last line). */
function npmFailure(error: unknown): string {
  const lines = String((error as { stderr?: unknown }).stderr ?? "")
    .split("\n")
    .map((line) => line.replace(/^npm (?:error|ERR!) ?/, "").trim())
    .filter(Boolean);
  return lines.find((line) => line.startsWith("code "))?.slice(5) ?? lines.at(-1) ?? String(error);
}

/**
 * A native package for the functions' platform that npm did not install on this machine (it
 * installs the binaries of the machine it runs on, and `npm install` fetches nothing for a
 * deploy): fetched by the first bundle that needs it, at the version and integrity the lockfile
 * pins, with one line saying so, then kept in the cache for every later synth. Answers its folder
 * and whether it was fetched now.
 */
async function platformPackage(
  name: string,
  cache: PlatformCache,
): Promise<{ dir: string; fetched: boolean }> {
  const pin = pinned(name, cache.lockfile);
  if (!pin?.integrity) throw new Error(`${name} is not in ${basename(cache.lockfile)}`);
  const spec = `${name}@${pin.version}`;
  const dir = join(cache.dir, spec);
  if (existsSync(join(dir, "package.json"))) return { dir, fetched: false };
  const shown = cache.dir.startsWith(REPO_ROOT + sep) ? relative(REPO_ROOT, cache.dir) : cache.dir;
  console.error(
    `kb-intel: fetching ${spec}, the functions' linux-arm64 build that npm does not install on ` +
      `this machine, into ${shown} (once: later synths reuse it)`,
  );
  mkdirSync(cache.dir, { recursive: true });
  // Fetched and unpacked in a folder of its own, renamed into place when complete: an
  // interrupted fetch never looks complete, and two synths at once do not mix their files.
  const work = mkdtempSync(join(cache.dir, ".fetch-"));
  try {
    let packed: string;
    try {
      ({ stdout: packed } = await promisify(execFile)(
        "npm",
        ["pack", spec, "--prefer-offline", "--loglevel=error"],
        { cwd: work, encoding: "utf8" },
      ));
    } catch (error) {
      throw new Error(
        `could not fetch ${spec} for the functions' platform (npm pack: ${npmFailure(error)}); ` +
          "the first synth needs the npm registry once",
      );
    }
    const tarball = join(work, packed.trim());
    const [algorithm, digest] = pin.integrity.split("-") as [string, string];
    if (createHash(algorithm).update(readFileSync(tarball)).digest("base64") !== digest) {
      throw new Error(`${spec} does not match ${basename(cache.lockfile)}'s integrity`);
    }
    const unpacked = join(work, "package");
    mkdirSync(unpacked);
    execFileSync("tar", ["-xzf", tarball, "-C", unpacked, "--strip-components=1"]);
    mkdirSync(dirname(dir), { recursive: true });
    try {
      renameSync(unpacked, dir);
    } catch (error) {
      // Another synth put it in place first: theirs is the same package.
      if (!existsSync(join(dir, "package.json"))) throw error;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return { dir, fetched: true };
}

interface NodeModules {
  /** Folders of installed packages, each copied as it is. */
  installed: Set<string>;
  /** Native packages for the functions' platform that npm did not install on this machine. */
  platform: Set<string>;
}

/**
 * `packages` and everything they depend on, found as Node would from this checkout's
 * node_modules: native packages for the functions' platform only. An optional dependency npm did
 * not install is left out, as npm would, unless it is the functions' platform binary.
 */
function nodeModulesOf(packages: string[]): NodeModules {
  const found: NodeModules = { installed: new Set(), platform: new Set() };
  const visit = (source: string) => {
    if (found.installed.has(source)) return;
    found.installed.add(source);
    const pkg = readJson<PackageJson>(join(source, "package.json"));
    const optional = new Set(Object.keys(pkg.optionalDependencies ?? {}));
    for (const name of new Set([...Object.keys(pkg.dependencies ?? {}), ...optional])) {
      const at = resolvePackage(source, name);
      if (at) {
        if (runsOnLambda(readJson<PackageJson>(join(at, "package.json")))) visit(at);
        continue;
      }
      const pin = pinned(name);
      if (pin && (pin.os || pin.cpu) && runsOnLambda(pin)) found.platform.add(name);
      else if (!optional.has(name)) {
        throw new Error(`${name}, a dependency of ${source}, is not installed`);
      }
    }
  };
  for (const name of packages) {
    const at = resolvePackage(REPO_ROOT, name);
    if (!at) throw new Error(`${name} is not installed`);
    visit(at);
  }
  return found;
}

/**
 * Where `packages` and everything they depend on (`nodeModulesOf`) come from, and their paths
 * under a function's `node_modules`; a package nested in another's node_modules comes with it.
 * The platform packages come from `cache`, fetched into it if they are not there yet.
 */
async function nodeModulesCopies(
  packages: string[],
  cache: PlatformCache,
): Promise<Array<{ from: string; to: string }>> {
  const { installed, platform } = nodeModulesOf(packages);
  const top = join(REPO_ROOT, "node_modules");
  const fetched = [];
  for (const name of platform) {
    fetched.push({ from: (await platformPackage(name, cache)).dir, to: name });
  }
  return [
    ...fetched,
    ...[...installed]
      .map((source) => ({ from: source, to: relative(top, source) }))
      .filter(({ to }) => !to.split(sep).includes("node_modules")),
  ];
}

/** Packages' executables stay behind: nothing in a function runs them. */
const copied = (file: string) => !file.includes(`${sep}.bin`);

/** Copies `nodeModulesCopies` into `{dir}/node_modules`, at exactly the installed versions. */
async function copyNodeModules(packages: string[], dir: string, cache: PlatformCache) {
  for (const { from, to } of await nodeModulesCopies(packages, cache)) {
    cpSync(from, join(dir, "node_modules", to), { recursive: true, filter: copied });
  }
}

/**
 * The bytes `packages` add beside a function's bundle (`copyNodeModules`), without copying them:
 * Lambda counts them in its 250 MB limit on a function's unzipped code.
 */
export async function nodeModulesBytes(
  packages: string[],
  cache = PLATFORM_CACHE,
): Promise<number> {
  let total = 0;
  for (const { from } of await nodeModulesCopies(packages, cache)) {
    for (const entry of readdirSync(from, { withFileTypes: true, recursive: true })) {
      const file = join(entry.parentPath, entry.name);
      if (entry.isFile() && copied(file)) total += statSync(file).size;
    }
  }
  return total;
}

const FUNCTIONS: BundleRequest[] = [
  ...apiFunctions,
  ...queueWorkers,
  ...scheduledFunctions,
  ...invokedFunctions,
];

/**
 * The native packages for the functions' platform that the manifest's functions need beside
 * their bundles and npm did not install on this machine (none on linux-arm64).
 */
export function missingPlatformPackages(): string[] {
  return [...new Set(FUNCTIONS.flatMap((fn) => [...nodeModulesOf(fn.nodeModules ?? []).platform]))];
}

/**
 * Fetches every missing platform package into `cache` now rather than at the first bundle that
 * needs it; answers those it had to fetch.
 */
export async function fetchPlatformPackages(cache = PLATFORM_CACHE): Promise<string[]> {
  const fetched: string[] = [];
  for (const name of missingPlatformPackages()) {
    if ((await platformPackage(name, cache)).fetched) fetched.push(name);
  }
  return fetched;
}

/**
 * Builds `options` as if its output file were at the repository's root, then writes it into `dir`:
 * its source map names every source by its path in the repository (`lib/…`, `node_modules/…`),
 * not by a path from wherever `dir` is, so a bundle, and the asset hash CDK computes from it, is
 * the same whatever folder it is written to and whatever the shell's current directory.
 */
async function buildInto(dir: string, options: BuildOptions) {
  const result = await build({
    ...options,
    outfile: join(REPO_ROOT, basename(options.outfile ?? "")),
    absWorkingDir: REPO_ROOT,
    write: false,
  });
  for (const file of result.outputFiles) {
    writeFileSync(join(dir, basename(file.path)), file.contents);
  }
  return result;
}

/**
 * Bundles one function into `{outRoot}/{name}/index.mjs`. Its `nodeModules` are copied next to
 * it from this checkout, the platform packages npm did not install from `cache` (fetched into it
 * at first use), unless `installNodeModules` is false (tests that only read the template).
 */
export async function bundleFunction(
  request: BundleRequest,
  outRoot: string,
  installNodeModules = true,
  cache = PLATFORM_CACHE,
): Promise<BundleResult> {
  const dir = join(outRoot, request.name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, "index.mjs");
  const modules = request.nodeModules ?? [];
  const result = await buildInto(dir, bundleOptions(request.entry, outfile, modules));
  const inputs = Object.keys(result.metafile?.inputs ?? {});
  if (inputs.some((input) => input.endsWith("lib/files/sandbox.ts"))) {
    // Files are parsed and pages read in sandbox threads, which load their script from beside the
    // bundle (jsdom, in `modules`, stays out of both and is installed beside them).
    await buildInto(dir, {
      ...bundleOptions("lib/files/parse-worker.ts", join(dir, "parse-worker.mjs"), modules),
      metafile: false,
    });
  }
  if (inputs.some((input) => input.endsWith("lib/http/docs.ts"))) {
    // The API reference serves its viewer (Scalar's prebuilt bundle) from beside the bundle.
    copyFileSync(viewerSource(), join(dir, VIEWER_FILE));
  }
  if (modules.length > 0 && installNodeModules) {
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
    await copyNodeModules(modules, dir, cache);
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
  cache = PLATFORM_CACHE,
): Promise<Map<string, BundleResult>> {
  const results = new Map<string, BundleResult>();
  for (const fn of FUNCTIONS) {
    results.set(fn.name, await bundleFunction(fn, outRoot, installNodeModules, cache));
  }
  return results;
}
