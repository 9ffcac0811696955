import { mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { build } from "esbuild";
import { type BundleRequest, bundleOptions } from "../../infra/aws/bundle.js";

/**
 * A function bundled with the deployed options except that the AWS SDK goes into the bundle
 * instead of being left to the Lambda runtime: the peer that tells what bundling the SDK (and so
 * tree-shaking and minifying it) would do to a cold start, and to the bundle's size.
 */
export async function bundleWithSdk(request: BundleRequest, outRoot: string) {
  const dir = join(outRoot, `${request.name}-sdk-bundled`);
  await mkdir(dir, { recursive: true });
  const outfile = join(dir, "index.mjs");
  const options = bundleOptions(request.entry, outfile, request.nodeModules);
  await build({ ...options, external: request.nodeModules ?? [] });
  return { bundle: outfile, bytes: (await stat(outfile)).size };
}
