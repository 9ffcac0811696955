/**
 * What rendering a page means to the code that asks for it: a URL in, the DOM as a browser built
 * it out. The browser in this process (browser.ts) is one renderer; on AWS a function of its own
 * is another (lib/store), so that only that function carries a browser.
 */

export const RENDER_MODES = ["auto", "always", "never"] as const;

/**
 * When a page is rendered in a browser: `auto` when its HTML shows it needs scripts
 * (render/detect.ts), `always`, or `never`.
 */
export type RenderMode = (typeof RENDER_MODES)[number];

export interface RenderRequest {
  /** The page, after the redirects its fetch followed. */
  url: string;
  /** The page as just fetched: served to the browser instead of asking the site again. */
  document?: { body: Buffer; contentType: string } | undefined;
  /** Also capture a JPEG of the rendered page (competitor checks' evidence). */
  screenshot?: boolean;
  /** Less time than the renderer's own bound, when the caller has less left. */
  timeoutMs?: number;
}

export interface RenderedPage {
  /** Where the browser ended up. */
  url: string;
  /** The DOM serialised after scripts ran, consent overlays removed. */
  html: string;
  /** JPEG, when asked for and small enough. */
  screenshot?: Buffer | undefined;
}

/** Renders pages; rejects with a `FetchError` (`needs_browser`, `render_timeout`, ...) otherwise. */
export interface Renderer {
  render(request: RenderRequest): Promise<RenderedPage>;
}
