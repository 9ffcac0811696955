import { createCompetitorServices } from "../../lib/competitors/services.js";
import { BrowserRenderer } from "../../lib/web/render/browser.js";
import { startAws, type TestAws } from "../support/aws.js";
import { CHROMIUM } from "../support/browser.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";
import { fixtureFetcher, TEST_LIMITS } from "./world.js";

/**
 * A competitor's site whose pricing page is a script that fills in its plans from a JSON request,
 * as a single-page app does: read as sent it has no plans, rendered it has them.
 */

export interface ScriptedPlan {
  name: string;
  price: number;
}

const PRICING_APP = `
fetch("/api/plans").then((r) => r.json()).then((plans) => {
  document.getElementById("root").innerHTML = "<h1>Pricing</h1><div class='plans'>" + plans.map((p) =>
    "<div class='plan-card'><h3>" + p.name + "</h3><p class='price'><span class='amount'>$" + p.price +
    "</span><span class='period'>/month</span></p><a href='/signup'>Start trial</a></div>"
  ).join("") + "</div>";
});`;

/** The home page of Acme with `headline`, linking the pricing page. */
export const scriptedHome = (headline: string) =>
  htmlPage("Acme", `<nav><a href="/pricing">Pricing</a></nav><h1>${headline}</h1>${prose("Acme")}`);

/** The site, answering the plans `plans` gives at each request. */
export function startScriptedSite(plans: () => readonly ScriptedPlan[]): Promise<Site> {
  return startSite({
    "/": respond(scriptedHome("Marketing sites that write themselves")),
    "/robots.txt": respond("User-agent: *\nAllow: /\n", { "content-type": "text/plain" }),
    "/pricing": respond(
      htmlPage("Pricing", '<div id="root"></div><script src="/pricing.js"></script>'),
    ),
    "/pricing.js": respond(PRICING_APP, { "content-type": "text/javascript" }),
    "/api/plans": (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(plans()));
    },
  });
}

/**
 * What the tests of rendered competitor pages share: the emulated AWS, the scripted site
 * answering the plans `world.plans` holds at each request (a test sets it to change the prices),
 * a real Chromium, and the competitor services over them, with the browser or without one.
 */
export interface RenderedWorld {
  aws: TestAws;
  site: Site;
  renderer: BrowserRenderer;
  plans: readonly ScriptedPlan[];
  services(withBrowser?: boolean): ReturnType<typeof createCompetitorServices>;
  close(): Promise<void>;
}

export async function startRenderedWorld(): Promise<RenderedWorld> {
  const renderer = new BrowserRenderer({ fetcher: fixtureFetcher, executablePath: CHROMIUM });
  const [aws, site] = await Promise.all([startAws(), startScriptedSite(() => world.plans)]);
  const world: RenderedWorld = {
    aws,
    site,
    renderer,
    plans: [
      { name: "Starter", price: 29 },
      { name: "Growth", price: 99 },
    ],
    services: (withBrowser = true) =>
      createCompetitorServices({
        table: aws.table,
        blobs: aws.blobs,
        fetcher: fixtureFetcher,
        limits: TEST_LIMITS,
        renderer: withBrowser ? renderer : undefined,
      }),
    async close() {
      await renderer.close();
      await Promise.all([site.close(), aws.close()]);
    },
  };
  return world;
}
