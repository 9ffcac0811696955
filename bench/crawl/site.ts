import { htmlPage, respond, type Site, startSite } from "../../test/support/sites.js";
import { Corpus } from "../core/corpus.js";

/**
 * Figure 4's fixture site on 127.0.0.1: a home page and articles of real prose (Zipf-distributed
 * words, 4 to 8 sections), each with site navigation, related-article links and a footer, as a
 * documentation or blog site has; robots.txt names a sitemap listing every page and, when asked,
 * a `Crawl-delay` (the bench turns the crawl pace off; a delay turns it on for one site).
 */
export interface CrawlSite {
  site: Site;
  /** The seed of a crawl: the home page. */
  seed: string;
  /** Every page's URL and HTML, home page first, exactly as served. */
  pages: Array<{ url: string; html: string }>;
}

const RELATED = 8;

export async function startCrawlSite(
  pageCount: number,
  options: { seed?: number; crawlDelaySeconds?: number } = {},
): Promise<CrawlSite> {
  const { seed = 41, crawlDelaySeconds } = options;
  const corpus = new Corpus(seed);
  const site = await startSite();
  const paths = ["/", ...Array.from({ length: pageCount - 1 }, (_, i) => `/articles/${i + 1}`)];
  const titles = paths.map((path) => (path === "/" ? "Field notes" : corpus.heading()));
  const nav = `<header><nav><a href="/">Home</a> ${paths
    .slice(1, 6)
    .map((path, i) => `<a href="${path}">${titles[i + 1]}</a>`)
    .join(" ")}</nav></header>`;
  const footer =
    '<footer><p>© 2025 Field notes. <a href="/about">About</a> <a href="/privacy">Privacy</a></p></footer>';
  const pages = paths.map((path, i) => {
    const related = Array.from(
      { length: RELATED },
      (_, k) => paths[1 + ((i * 7 + k * 13) % (pageCount - 1))],
    )
      .map((p) => `<li><a href="${p}">${titles[paths.indexOf(p ?? "/")]}</a></li>`)
      .join("");
    const sections = Array.from({ length: 4 + (i % 5) }, () => {
      const paragraphs = Array.from({ length: 2 }, () => `<p>${corpus.paragraph(420)}</p>`);
      return `<h2>${corpus.heading()}</h2>${paragraphs.join("")}`;
    }).join("");
    const body = `${nav}<main><article><h1>${titles[i]}</h1>${sections}</article><aside><h3>Related</h3><ul>${related}</ul></aside></main>${footer}`;
    const html = htmlPage(titles[i] ?? path, body);
    site.route(path, respond(html));
    return { url: `${site.origin}${path}`, html };
  });
  const urls = pages.map(({ url }) => `<url><loc>${url}</loc></url>`).join("");
  site.route(
    "/sitemap.xml",
    respond(
      `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls}</urlset>`,
      { "content-type": "application/xml" },
    ),
  );
  const delay = crawlDelaySeconds === undefined ? "" : `Crawl-delay: ${crawlDelaySeconds}\n`;
  site.route(
    "/robots.txt",
    respond(`User-agent: *\nAllow: /\n${delay}Sitemap: ${site.origin}/sitemap.xml\n`, {
      "content-type": "text/plain",
    }),
  );
  return { site, seed: `${site.origin}/`, pages };
}
