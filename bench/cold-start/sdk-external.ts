import { mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { build } from "esbuild";
import { type BundleRequest, bundleOptions } from "../../infra/aws/bundle.js";

/**
 * A function bundled with the deployed options except that the AWS SDK is left out, to be
 * resolved at run time as from the Lambda runtime's own copy (here, the repository's
 * node_modules): the peer that tells what bundling the SDK (tree-shaken and minified) changed
 * in a cold start, and in the bundle's size.
 */
export async function bundleWithoutSdk(request: BundleRequest, outRoot: string) {
  const dir = join(outRoot, `${request.name}-sdk-external`);
  await mkdir(dir, { recursive: true });
  const outfile = join(dir, "index.mjs");
  const external = [...(request.nodeModules ?? []), "@aws-sdk/*"];
  await build(bundleOptions(request.entry, outfile, external));
  return { bundle: outfile, bytes: (await stat(outfile)).size };
}
