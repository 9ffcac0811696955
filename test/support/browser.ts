import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium, installed by apt (`.ci/run` installs it on a fresh machine). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** A headless Chromium for tests that need a real browser (CORS, the API reference page). */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No browser at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`,
    );
  }
  // The sandbox needs user namespaces, which containers and root rarely have.
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}
