import chromium from "@sparticuz/chromium";
import { fetcherOf } from "../lib/compose/fetcher.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { BrowserRenderer } from "../lib/web/render/browser.js";
import { answerRender, type RenderPayload } from "../lib/web/render/remote.js";

const config = loadConfig();

/**
 * Renders one page that needs scripts for the functions that read pages (lib/web/render/remote.ts
 * invokes it): the only function with a browser, @sparticuz/chromium's build for Lambda, unpacked
 * into /tmp once per cold start and kept for the instance's later pages. Every request the page
 * makes goes through the same safe fetcher as any fetch of the service.
 */
const renderer = new BrowserRenderer({
  fetcher: fetcherOf(config),
  executablePath: await chromium.executablePath(),
  args: chromium.args,
  // Lambda hands an instance one invocation at a time.
  concurrency: 1,
});

export const handler = invocation((payload: RenderPayload) => answerRender(renderer, payload));
