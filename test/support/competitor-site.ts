import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A competitor's website on 127.0.0.1 whose content a test switches between versions: plans on a
 * pricing page, job postings on an embedded Greenhouse board (its JSON API served here too), posts
 * in a blog, feed and sitemap, and a homepage headline with claims. The noise fields change what a
 * visitor sees without the company changing anything.
 */

export interface SitePlan {
  name: string;
  /** Shown as written (`$29`); absent for a "contact sales" plan. */
  price?: string;
  features?: string[];
}

export interface SiteJob {
  id: number;
  title: string;
  team: string;
  location: string;
}

export interface SitePost {
  slug: string;
  title: string;
  /** `YYYY-MM-DD`. */
  date: string;
}

export interface SiteState {
  headline: string;
  subheadline: string;
  claims: string[];
  plans: SitePlan[];
  jobs: SiteJob[];
  posts: SitePost[];
  /** Other pages the site serves and lists in its sitemap (`/vs/us`, `/product/x`): a page each. */
  pages: string[];
  /** Paths robots.txt disallows for every agent. */
  disallow: string[];
  /** Where the careers page lists jobs: an embedded Greenhouse board, or its own HTML. */
  jobBoard: "greenhouse" | "html";
  /** Noise: a render date shown in footers, feeds and the board's timestamps. */
  renderedAt: string;
  /** Noise: the testimonial the carousel happens to show. */
  testimonial: string;
  /** Noise: a fresh CSRF token per render. */
  csrf: string;
  /** Noise: a counter in the copy. */
  teams: number;
  /** Noise: lists rendered in reverse order. */
  reversed: boolean;
}

export const baseSite = (): SiteState => ({
  headline: "The fastest way to ship marketing sites",
  subheadline: "Acme builds, hosts and measures your pages.",
  claims: ["Launch in minutes, not weeks", "Analytics built in"],
  plans: [
    { name: "Starter", price: "$10", features: ["1 site"] },
    { name: "Pro", price: "$29", features: ["10 sites", "Analytics"] },
    { name: "Enterprise", features: ["SSO", "Audit log"] },
  ],
  jobs: [
    { id: 101, title: "Senior Backend Engineer", team: "Engineering", location: "Berlin" },
    { id: 102, title: "Frontend Engineer", team: "Engineering", location: "Remote" },
    { id: 103, title: "Account Executive", team: "Sales", location: "London" },
  ],
  posts: [
    { slug: "hello-world", title: "Hello world", date: "2025-01-10" },
    { slug: "faster-builds", title: "Faster builds for everyone", date: "2025-02-03" },
  ],
  pages: [],
  disallow: ["/private/"],
  jobBoard: "greenhouse",
  renderedAt: "2025-03-01T10:00:00Z",
  testimonial: "Acme doubled our signups. (Jane, Initech)",
  csrf: "tok-1",
  teams: 10512,
  reversed: false,
});

export interface CompetitorSite {
  origin: string;
  state: SiteState;
  /** Paths requested, in order. */
  requests: string[];
  /** Most requests that were in flight at once. */
  maxInFlight: number;
  /** Paths that answer 503 for now. */
  failing: Set<string>;
  close(): Promise<void>;
}

const ordered = <T>(state: SiteState, items: T[]) =>
  state.reversed ? [...items].reverse() : items;

function layout(state: SiteState, title: string, body: string, head = ""): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<meta name="csrf-token" content="${state.csrf}">
<meta name="description" content="Acme is the website platform for marketing teams.">
${head}</head>
<body>
<header><nav>
  <a href="/">Acme</a> <a href="/pricing">Pricing</a> <a href="/careers">Careers</a>
  <a href="/blog">Blog</a> <a href="/private/admin">Admin</a>
</nav></header>
<main>${body}</main>
<div id="cookie-banner" class="cookie-consent">We use cookies (set ${state.renderedAt}). <button>Accept</button></div>
<footer><p>© 2025 Acme Inc. Page rendered ${state.renderedAt}</p>
<form action="/newsletter" method="post"><input type="hidden" name="csrf" value="${state.csrf}"><input name="email"></form>
</footer>
</body></html>`;
}

function home(state: SiteState): string {
  const claims = ordered(state, state.claims)
    .map((claim) => `<section><h2>${claim}</h2><p>More about it.</p></section>`)
    .join("\n");
  return layout(
    state,
    "Acme: websites for marketers",
    `<section class="hero"><h1>${state.headline}</h1><p>${state.subheadline}</p>
  <a href="/signup">Start free</a></section>
<h2>Trusted by ${state.teams.toLocaleString("en-US")} teams</h2>
${claims}
<section class="testimonials"><h2>What customers say</h2><blockquote>${state.testimonial}</blockquote></section>`,
    '<link rel="alternate" type="application/rss+xml" title="Acme blog" href="/blog/feed.xml">',
  );
}

function pricing(state: SiteState): string {
  const cards = ordered(state, state.plans)
    .map((plan) => {
      const price = plan.price
        ? `<p class="price"><span class="amount">${plan.price}</span><span class="period">/month</span></p>
           <p class="annual" hidden>${plan.price} billed yearly</p>`
        : `<p class="price">Custom</p>`;
      const cta = plan.price
        ? `<a href="/signup">Start trial</a>`
        : `<a href="/contact">Contact sales</a>`;
      const features = (plan.features ?? []).map((f) => `<li>${f}</li>`).join("");
      return `<div class="plan-card"><h3>${plan.name}</h3>${price}<ul>${features}</ul>${cta}</div>`;
    })
    .join("\n");
  return layout(
    state,
    "Pricing - Acme",
    `<h1>Simple pricing</h1><p>Prices updated ${state.renderedAt}.</p>
<div class="plans">${cards}</div>
<section class="faq"><h2>Questions</h2>
  <h3>Can I change plans later?</h3><p>Yes, and unused time becomes a $5 credit.</p>
  <h3>Do you offer discounts?</h3><p>Nonprofits pay 50% less.</p>
</section>`,
  );
}

function careers(state: SiteState): string {
  const intro = `<h1>Join Acme</h1><p>We have ${state.jobs.length} open roles.</p>`;
  if (state.jobBoard === "greenhouse") {
    return layout(
      state,
      "Careers - Acme",
      `${intro}<div id="grnhse_app"></div>
<script src="https://boards.greenhouse.io/embed/job_board/js?for=acme"></script>`,
    );
  }
  const teams = ordered(state, [...new Set(state.jobs.map((job) => job.team))]);
  const sections = teams
    .map((team) => {
      const jobs = ordered(
        state,
        state.jobs.filter((job) => job.team === team),
      )
        .map(
          (job) =>
            `<li><a href="/careers/${job.id}">${job.title} <span class="job-location">${job.location}</span></a></li>`,
        )
        .join("");
      return `<section><h2>${team}</h2><ul>${jobs}</ul></section>`;
    })
    .join("\n");
  return layout(state, "Careers - Acme", `${intro}${sections}`);
}

function greenhouse(state: SiteState): unknown {
  const teams = [...new Set(state.jobs.map((job) => job.team))];
  return {
    departments: ordered(state, teams).map((team, i) => ({
      id: 4000 + i,
      name: team,
      parent_id: null,
      child_ids: [],
      jobs: ordered(
        state,
        state.jobs.filter((job) => job.team === team),
      ).map((job) => ({
        id: job.id,
        title: job.title,
        updated_at: state.renderedAt,
        location: { name: job.location },
        absolute_url: `https://boards.greenhouse.io/acme/jobs/${job.id}`,
      })),
    })),
  };
}

function blog(state: SiteState): string {
  const articles = ordered(state, state.posts)
    .map(
      (post) =>
        `<article><h2><a href="/blog/${post.slug}">${post.title}</a></h2><time datetime="${post.date}">${post.date}</time></article>`,
    )
    .join("\n");
  return layout(
    state,
    "Blog - Acme",
    `<h1>Blog</h1>${articles}`,
    '<link rel="alternate" type="application/rss+xml" href="/blog/feed.xml">',
  );
}

function feed(state: SiteState, origin: string): string {
  const items = ordered(state, state.posts)
    .map(
      (post) => `<item><title>${post.title}</title><link>${origin}/blog/${post.slug}</link>
<guid>${origin}/blog/${post.slug}</guid><pubDate>${new Date(post.date).toUTCString()}</pubDate></item>`,
    )
    .join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Acme blog</title><link>${origin}/blog</link>
<lastBuildDate>${new Date(state.renderedAt).toUTCString()}</lastBuildDate>
${items}</channel></rss>`;
}

function sitemap(state: SiteState, origin: string): string {
  const urls = [
    "/",
    "/pricing",
    "/careers",
    "/blog",
    ...state.posts.map((p) => `/blog/${p.slug}`),
    ...state.pages,
  ]
    .map(
      (path) =>
        `<url><loc>${origin}${path}</loc><lastmod>${state.renderedAt.slice(0, 10)}</lastmod></url>`,
    )
    .join("");
  return `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls}</urlset>`;
}

function route(state: SiteState, origin: string, path: string): [number, string, string] {
  const html = "text/html; charset=utf-8";
  if (path === "/robots.txt") {
    return [
      200,
      "text/plain",
      `User-agent: *\n${state.disallow.map((path) => `Disallow: ${path}\n`).join("")}\nSitemap: ${origin}/sitemap.xml\n`,
    ];
  }
  if (path === "/") return [200, html, home(state)];
  if (path === "/pricing") return [200, html, pricing(state)];
  if (path === "/careers") return [200, html, careers(state)];
  if (path === "/blog") return [200, html, blog(state)];
  if (path === "/blog/feed.xml") return [200, "application/rss+xml", feed(state, origin)];
  if (path === "/sitemap.xml") return [200, "application/xml", sitemap(state, origin)];
  if (path === "/v1/boards/acme/departments") {
    return [200, "application/json", JSON.stringify(greenhouse(state))];
  }
  const post = state.posts.find((p) => path === `/blog/${p.slug}`);
  if (post) return [200, html, layout(state, post.title, `<h1>${post.title}</h1>`)];
  if (state.pages.includes(path)) return [200, html, layout(state, path, `<h1>${path}</h1>`)];
  return [404, html, layout(state, "Not found", "<h1>Not found</h1>")];
}

export async function startCompetitorSite(state: SiteState = baseSite()): Promise<CompetitorSite> {
  let inFlight = 0;
  const site: CompetitorSite = {
    origin: "",
    state,
    requests: [],
    maxInFlight: 0,
    failing: new Set(),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", site.origin).pathname;
    site.requests.push(path);
    inFlight++;
    site.maxInFlight = Math.max(site.maxInFlight, inFlight);
    // Answering on the next turn lets overlapping requests show up in `maxInFlight`.
    setImmediate(() => {
      const [status, type, body] = site.failing.has(path)
        ? [503, "text/plain", "Service unavailable"]
        : route(site.state, site.origin, path);
      res.writeHead(status, { "content-type": type });
      res.end(body, () => inFlight--);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  site.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return site;
}
