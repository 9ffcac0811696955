import type { Config } from "../config.js";
import { logger } from "../log.js";
import type { SafeFetcher } from "../web/fetch.js";
import { BrowserRenderer } from "../web/render/browser.js";
import { LambdaRenderer } from "../web/render/remote.js";
import type { Renderer } from "../web/render/renderer.js";

/**
 * The renderer of pages that need scripts. On AWS the stack sets RENDER_FUNCTION_NAME and pages
 * are rendered by that function, so no other function carries a browser. Elsewhere (the local
 * runtime, tests): one browser per process however many functions the process runs, launched on
 * the first page that needs it. No browser installed: undefined, said once, and those pages fail
 * with `needs_browser`.
 */
let shared: BrowserRenderer | undefined;
let remote: LambdaRenderer | undefined;
let said = false;

export function rendererOf(config: Config, fetcher: SafeFetcher): Renderer | undefined {
  if (config.RENDER_FUNCTION_NAME) {
    remote ??= new LambdaRenderer(config.RENDER_FUNCTION_NAME);
    return remote;
  }
  shared ??= new BrowserRenderer({ fetcher, executablePath: config.CHROMIUM_PATH });
  if (shared.available) return shared;
  if (!said) {
    said = true;
    logger.warn(
      `No browser at CHROMIUM_PATH (${config.CHROMIUM_PATH}): pages that need scripts to show their content fail with needs_browser`,
    );
  }
  return undefined;
}
