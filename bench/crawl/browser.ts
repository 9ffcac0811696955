import { existsSync } from "node:fs";
import { chromium } from "playwright-core";
import { loadConfig } from "../../lib/config.js";
import { CHROMIUM_SWITCHES } from "../../lib/web/render/browser.js";

/**
 * Figure 4's floor for rendering: a bare Playwright loop, the least a crawl that renders could
 * cost. One Chromium (the service's, `CHROMIUM_PATH`, with its switches), one page, each URL
 * opened in turn until its DOM is built and its HTML read back; no interception, no settling wait,
 * no extraction. Without the renderer's dead-end proxy: the loop has no relay to send requests
 * through, so Chromium reaches the fixture site itself.
 */
export interface BareBrowser {
  /** Opens each URL and reads its HTML; answers how many pages had some. */
  read(urls: readonly string[]): Promise<number>;
  close(): Promise<void>;
}

/** Undefined when no Chromium is installed here: the figure leaves the rendering rows out. */
export async function startBareBrowser(): Promise<BareBrowser | undefined> {
  const executablePath = loadConfig().CHROMIUM_PATH;
  if (!existsSync(executablePath)) return undefined;
  const browser = await chromium.launch({ executablePath, args: [...CHROMIUM_SWITCHES] });
  const page = await browser.newPage();
  return {
    async read(urls) {
      let read = 0;
      for (const url of urls) {
        await page.goto(url, { waitUntil: "domcontentloaded" });
        if ((await page.content()).length > 0) read++;
      }
      return read;
    },
    close: () => browser.close(),
  };
}
