import { z } from "@hono/zod-openapi";
import { RENDER_MODES } from "./renderer.js";

/** The `render` field of URL sources, crawls and competitors, as their contracts take it. */
export const RenderSchema = z.enum(RENDER_MODES).openapi({
  description:
    "When pages are rendered in a headless browser before they are read: `auto` (default) when a page's HTML shows it needs scripts (an empty app root, a `<noscript>` asking for JavaScript, little text beside scripts), `always`, or `never`. A page that needs scripts where no browser is available fails with `needs_browser`",
});
