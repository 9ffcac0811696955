import { contentTypeHeader, decodeText } from "../content-type.js";
import { FetchError } from "../errors.js";
import { blockedBy, needsScripts } from "./detect.js";
import { profilePage } from "./profile.js";
import type { Renderer, RenderMode } from "./renderer.js";

/**
 * A fetched page as a browser would show it, for URL sources, crawls and competitor checks alike:
 * a wall (bot challenge, captcha, block or login page) fails as `blocked`; a page that needs
 * scripts (or every page, under `always`) is rendered and its DOM taken instead; any other page is
 * the HTML the server sent, untouched. A page that needs scripts where no renderer is fails as
 * `needs_browser`, never as an empty page.
 */

export interface FetchedPage {
  /** After redirects. */
  url: string;
  body: Buffer;
  charset: string | undefined;
  mime: string;
}

export interface ViewOptions {
  mode: RenderMode;
  /** Absent where no browser can run: pages that need one fail with `needs_browser`. */
  renderer?: Renderer | undefined;
  /** Capture a screenshot when the page is rendered. */
  screenshot?: boolean;
  /** The most time rendering may take, when the caller has less than the renderer's bound. */
  timeoutMs?: number;
}

export interface PageView {
  url: string;
  /** The server's bytes (not rendered), or the rendered DOM as UTF-8 text. */
  body: Buffer | string;
  /** The server's charset; undefined for a rendered DOM (a string). */
  charset: string | undefined;
  /** Why it was rendered; undefined when it was not. */
  rendered: string | undefined;
  screenshot?: Buffer | undefined;
}

function refuseWall(url: string, html: string, rendered: boolean): ReturnType<typeof profilePage> {
  const profile = profilePage(html);
  const wall = blockedBy(profile);
  if (wall) {
    const where = rendered ? "once rendered, shows" : "shows";
    throw new FetchError("blocked", `${url} ${where} ${wall} instead of its content`);
  }
  return profile;
}

export async function viewPage(page: FetchedPage, options: ViewOptions): Promise<PageView> {
  const html = decodeText(page.body, page.charset);
  const profile = refuseWall(page.url, html, false);
  const why =
    options.mode === "always"
      ? "render is always"
      : options.mode === "auto"
        ? needsScripts(profile)
        : undefined;
  if (!why) return { url: page.url, body: page.body, charset: page.charset, rendered: undefined };
  if (!options.renderer) {
    throw new FetchError(
      "needs_browser",
      `${page.url} needs scripts to show its content (${why}), and no browser is available here`,
    );
  }
  const rendered = await options.renderer.render({
    url: page.url,
    document: { body: page.body, contentType: contentTypeHeader(page) },
    ...(options.screenshot ? { screenshot: true } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
  refuseWall(rendered.url, rendered.html, true);
  return {
    url: rendered.url,
    body: rendered.html,
    charset: undefined,
    rendered: why,
    screenshot: rendered.screenshot,
  };
}
