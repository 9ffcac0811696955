/**
 * npm's `postinstall`: fetches the native packages for the functions' platform (linux-arm64) that
 * npm did not install on this machine into `node_modules/.cache/kb-intel-lambda`, so `cdk synth`
 * needs no network (see `platformPackage` in bundle.ts). Silent when they are there already.
 * Never fails the install: if they cannot be fetched now, it says so in one line and the first
 * synth fetches them. The cache folder may be given as an argument (tests).
 */
try {
  const { fetchPlatformPackages } = await import("./bundle.js");
  for (const name of fetchPlatformPackages(process.argv[2])) {
    console.log(`kb-intel: fetched ${name} for the functions' platform (linux-arm64)`);
  }
} catch (error) {
  console.warn(
    `kb-intel: warning: ${error instanceof Error ? error.message : error}; cdk synth will fetch the functions' linux-arm64 packages at first use`,
  );
}
