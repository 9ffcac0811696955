import { describe, expect, it } from "vitest";
import { discoverPages } from "../../lib/competitors/discover.js";
import {
  boardApiUrl,
  findBoards,
  PUBLIC_ATS_APIS,
  parseBoard,
} from "../../lib/competitors/extract/ats.js";
import {
  extractPosts,
  feedLinks,
  parseFeed,
  parseSitemap,
  postsFromSitemap,
} from "../../lib/competitors/extract/content.js";
import { loadHtml } from "../../lib/competitors/extract/html.js";
import { extractCompanyName } from "../../lib/competitors/extract/identity.js";
import { extractJobs } from "../../lib/competitors/extract/jobs.js";
import { extractMessaging, maskNumbers } from "../../lib/competitors/extract/messaging.js";
import { findPrice } from "../../lib/competitors/extract/price.js";
import { extractPlans } from "../../lib/competitors/extract/pricing.js";
import { ExtractionError } from "../../lib/web/page.js";

const page = (body: string, url = "https://acme.com/", head = "") =>
  loadHtml(url, `<!doctype html><html><head>${head}</head><body>${body}</body></html>`);

describe("loadHtml", () => {
  it("refuses a page nested deeper than 256 levels before parsing it", () => {
    const deep = () => page(`${"<div>".repeat(5_000)}<h1>Buried</h1>`);
    expect(deep).toThrow(ExtractionError);
    expect(deep).toThrow("The page nests elements more than 256 levels deep");
    const nested = page(`${"<div>".repeat(250)}<h1>Found</h1>`);
    expect(extractMessaging(nested).headline).toBe("Found");
  });
});

describe("findPrice", () => {
  it.each([
    ["$29/mo", { amount: 29, currency: "USD", period: "month", perSeat: false }],
    ["US$ 15 per user / month", { amount: 15, currency: "USD", period: "month", perSeat: true }],
    ["£9.99 a month", { amount: 9.99, currency: "GBP", period: "month", perSeat: false }],
    ["€1.299,00 per year", { amount: 1299, currency: "EUR", period: "year", perSeat: false }],
    ["1,299 EUR / yr", { amount: 1299, currency: "EUR", period: "year", perSeat: false }],
    [
      "$24 /seat/mo, billed annually",
      { amount: 24, currency: "USD", period: "month", perSeat: true },
    ],
    ["$290 billed annually", { amount: 290, currency: "USD", period: "year", perSeat: false }],
    ["CHF 49 monthly", { amount: 49, currency: "CHF", period: "month", perSeat: false }],
    ["29,99 € pro Monat", { amount: 29.99, currency: "EUR", period: null, perSeat: false }],
    ["$499 one-time", { amount: 499, currency: "USD", period: "once", perSeat: false }],
  ])("reads %j", (text, price) => {
    expect(findPrice(text)).toEqual(price);
  });

  it.each(["Save 20%", "Trusted by 10,000 teams", "Contact sales", "Version 2.5"])(
    "finds no price in %j",
    (text) => {
      expect(findPrice(text)).toBeUndefined();
    },
  );
});

describe("extractPlans", () => {
  it("reads cards named by a class rather than a heading, per-seat prices included", () => {
    const plans = extractPlans(
      page(`<div class="grid">
        <div class="tier"><div class="tier-name">Team</div><div>$19 /user/month</div></div>
        <div class="tier"><div class="tier-name">Business</div><div>$39 /user/month</div></div>
      </div>`),
    );
    expect(plans).toEqual([
      {
        name: "Team",
        price: 19,
        currency: "USD",
        period: "month",
        perSeat: true,
        contactSales: false,
      },
      {
        name: "Business",
        price: 39,
        currency: "USD",
        period: "month",
        perSeat: true,
        contactSales: false,
      },
    ]);
  });

  it("reads free and contact-sales plans, ignoring struck-out, hidden and FAQ prices", () => {
    const plans = extractPlans(
      page(`<section class="plans">
        <article><h3>Hobby</h3><p>Free forever</p><a href="/signup">Sign up</a></article>
        <article><h3>Pro</h3><p><del>$39</del> $29 per month</p><p hidden>$24 per month</p></article>
        <article><h3>Enterprise</h3><p>Tailored to you</p><button>Talk to sales</button></article>
      </section>
      <section><h3>What if I need more than $29 of usage?</h3><p>Overage is $1 per GB.</p></section>`),
    );
    expect(plans).toMatchObject([
      { name: "Hobby", price: 0, contactSales: false },
      { name: "Pro", price: 29, period: "month" },
      { name: "Enterprise", price: null, contactSales: true },
    ]);
  });

  it("finds no plans on a page without any", () => {
    expect(extractPlans(page("<h2>About us</h2><p>We started in 2019.</p>"))).toEqual([]);
  });
});

describe("extractJobs", () => {
  it("prefers schema.org JobPosting data", () => {
    const head = `<script type="application/ld+json">${JSON.stringify({
      "@context": "https://schema.org",
      "@graph": [
        {
          "@type": "JobPosting",
          title: "Product Designer",
          occupationalCategory: "Design",
          url: "https://acme.com/careers/designer",
          jobLocation: {
            "@type": "Place",
            address: { addressLocality: "Lisbon", addressCountry: "PT" },
          },
        },
      ],
    })}</script>`;
    expect(extractJobs(page("<h1>Careers</h1>", "https://acme.com/careers", head))).toEqual([
      {
        title: "Product Designer",
        team: "Design",
        location: "Lisbon, PT",
        url: "https://acme.com/careers/designer",
      },
    ]);
  });

  it("reads position links grouped under team headings, with their locations", () => {
    const jobs = extractJobs(
      page(
        `<main><h1>Open roles</h1>
          <h2>Engineering</h2><ul>
            <li><a href="/careers/backend">Backend Engineer <span class="location">Remote</span></a></li>
            <li><a href="/careers/sre">SRE <span class="location">Berlin</span></a></li></ul>
          <h2>Marketing</h2><ul><li><a href="/jobs/pmm"><strong>Product Marketer</strong></a> <span class="job-location">NYC</span></li></ul>
          <a href="/careers">All careers</a> <a href="/blog/hiring">How we hire</a></main>`,
        "https://acme.com/careers",
      ),
    );
    expect(jobs).toEqual([
      {
        title: "Backend Engineer",
        team: "Engineering",
        location: "Remote",
        url: "https://acme.com/careers/backend",
      },
      {
        title: "SRE",
        team: "Engineering",
        location: "Berlin",
        url: "https://acme.com/careers/sre",
      },
      {
        title: "Product Marketer",
        team: "Marketing",
        location: "NYC",
        url: "https://acme.com/jobs/pmm",
      },
    ]);
  });
});

describe("job boards", () => {
  it("finds Greenhouse, Lever and Ashby boards in embeds and links", () => {
    const html = `
      <script src="https://boards.greenhouse.io/embed/job_board/js?for=acmeinc"></script>
      <a href="https://jobs.lever.co/acme-labs/">Jobs</a>
      <iframe src="https://jobs.ashbyhq.com/Acme/embed"></iframe>
      <a href="https://job-boards.greenhouse.io/acmeinc/jobs/123">A job</a>`;
    expect(findBoards(html)).toEqual([
      { vendor: "greenhouse", token: "acmeinc" },
      { vendor: "lever", token: "acme-labs" },
      { vendor: "ashby", token: "Acme" },
    ]);
    expect(findBoards("<p>No board here</p>")).toEqual([]);
  });

  it("calls each vendor's public API", () => {
    expect(boardApiUrl({ vendor: "greenhouse", token: "acme" }, PUBLIC_ATS_APIS)).toBe(
      "https://boards-api.greenhouse.io/v1/boards/acme/departments",
    );
    expect(boardApiUrl({ vendor: "lever", token: "acme" }, PUBLIC_ATS_APIS)).toBe(
      "https://api.lever.co/v0/postings/acme?mode=json",
    );
    expect(boardApiUrl({ vendor: "ashby", token: "acme" }, PUBLIC_ATS_APIS)).toBe(
      "https://api.ashbyhq.com/posting-api/job-board/acme",
    );
  });

  it("reads Greenhouse departments, Lever postings and Ashby jobs", () => {
    expect(
      parseBoard("greenhouse", {
        departments: [
          {
            id: 1,
            name: "Sales",
            jobs: [{ id: 7, title: "AE ", location: { name: "NYC" }, absolute_url: "https://x/7" }],
          },
          {
            id: 2,
            name: "No Department",
            jobs: [{ id: 8, title: "Generalist", location: null, absolute_url: null }],
          },
        ],
      }),
    ).toEqual([
      { title: "AE", team: "Sales", location: "NYC", url: "https://x/7" },
      { title: "Generalist", team: null, location: null, url: null },
    ]);
    expect(
      parseBoard("lever", [
        {
          id: "a",
          text: "Designer",
          hostedUrl: "https://jobs.lever.co/acme/a",
          categories: { team: "Design", location: "Remote" },
        },
      ]),
    ).toEqual([
      {
        title: "Designer",
        team: "Design",
        location: "Remote",
        url: "https://jobs.lever.co/acme/a",
      },
    ]);
    expect(
      parseBoard("ashby", {
        jobs: [
          {
            title: "PM",
            department: "Product",
            team: null,
            location: "London",
            jobUrl: "https://a/1",
            isListed: true,
          },
          {
            title: "Secret",
            department: "Exec",
            location: "?",
            jobUrl: "https://a/2",
            isListed: false,
          },
        ],
      }),
    ).toEqual([{ title: "PM", team: "Product", location: "London", url: "https://a/1" }]);
  });

  it("throws when an answer is not the vendor's shape", () => {
    expect(() => parseBoard("greenhouse", { jobs: "nope" })).toThrow();
  });
});

describe("content", () => {
  it("reads RSS items and Atom entries, newest first", () => {
    const rss = `<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
      <item><title>Older &amp; wiser</title><link>/blog/older</link><pubDate>Mon, 06 Jan 2025 10:00:00 GMT</pubDate></item>
      <item><title>Newer</title><link>https://acme.com/blog/newer</link><pubDate>Tue, 04 Feb 2025 10:00:00 GMT</pubDate></item>
    </channel></rss>`;
    expect(parseFeed(rss, "https://acme.com/feed.xml")).toEqual([
      { title: "Newer", url: "https://acme.com/blog/newer", date: "2025-02-04" },
      { title: "Older & wiser", url: "https://acme.com/blog/older", date: "2025-01-06" },
    ]);
    const atom = `<feed xmlns="http://www.w3.org/2005/Atom"><entry><title type="html">Launch</title>
      <link rel="alternate" href="https://acme.com/news/launch"/><updated>2025-03-01T00:00:00Z</updated></entry></feed>`;
    expect(parseFeed(atom, "https://acme.com/")).toEqual([
      { title: "Launch", url: "https://acme.com/news/launch", date: "2025-03-01" },
    ]);
    expect(parseFeed("<html><body>Not a feed</body></html>", "https://acme.com/")).toBeUndefined();
  });

  it("finds feeds a page announces", () => {
    const home = page(
      "",
      "https://acme.com/",
      '<link rel="alternate" type="application/atom+xml" href="/atom.xml"><link rel="alternate" hreflang="de" href="/de">',
    );
    expect(feedLinks(home)).toEqual(["https://acme.com/atom.xml"]);
  });

  it("reads posts from a sitemap, keeping those under the blog", () => {
    const sitemap = parseSitemap(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <url><loc>https://acme.com/blog/launching-v2</loc><lastmod>2025-02-01</lastmod></url>
      <url><loc>https://acme.com/blog/tag/news</loc></url>
      <url><loc>https://acme.com/blog/</loc></url>
      <url><loc>https://acme.com/pricing</loc></url></urlset>`);
    expect(postsFromSitemap(sitemap?.pages ?? [], "https://acme.com/blog")).toEqual([
      { title: "Launching v2", url: "https://acme.com/blog/launching-v2", date: "2025-02-01" },
    ]);
    expect(
      parseSitemap(
        `<sitemapindex><sitemap><loc>https://acme.com/post-sitemap.xml</loc></sitemap></sitemapindex>`,
      ),
    ).toEqual({ pages: [], sitemaps: ["https://acme.com/post-sitemap.xml"] });
  });

  it("reads posts from a blog page's article cards, or else its post links", () => {
    const cards = page(
      `<article><h2><a href="/blog/one">Post one</a></h2><time datetime="2025-01-02">Jan 2</time></article>`,
      "https://acme.com/blog",
    );
    expect(extractPosts(cards)).toEqual([
      { title: "Post one", url: "https://acme.com/blog/one", date: "2025-01-02" },
    ]);
    const links = page(
      `<main><a href="/blog/a-long-post-title">A long post title</a><a href="/blog/page/2">Next page</a><a href="/about">About us here</a></main>`,
      "https://acme.com/blog",
    );
    expect(extractPosts(links)).toEqual([
      { title: "A long post title", url: "https://acme.com/blog/a-long-post-title", date: null },
    ]);
  });
});

describe("extractMessaging", () => {
  it("reads the headline and the main claims, without chrome, banners or testimonials", () => {
    const home = page(
      `<nav><h2>Menu</h2></nav>
       <header><h1>Ship faster</h1><p>The platform for growth teams.</p></header>
       <div class="cookie-banner"><h2>We value your privacy</h2></div>
       <section><h2>Built for scale</h2></section>
       <div class="testimonial-carousel"><h2>"Life changing" - Ann</h2></div>
       <footer><h2>Company</h2></footer>`,
      "https://acme.com/",
      '<meta name="description" content="Acme ships sites.">',
    );
    expect(extractMessaging(home)).toEqual({
      headline: "Ship faster",
      claims: ["Acme ships sites.", "The platform for growth teams.", "Built for scale"],
    });
  });

  it("falls back to the social title when the page has no h1", () => {
    const home = page(
      "<p>Hi</p>",
      "https://acme.com/",
      '<meta property="og:title" content="Acme, the site builder">',
    );
    expect(extractMessaging(home).headline).toBe("Acme, the site builder");
  });

  it("compares copy with counters and years masked", () => {
    expect(maskNumbers("Trusted by 10,512 teams since 2019")).toBe(
      maskNumbers("Trusted by 12,003 teams since 2020"),
    );
    expect(maskNumbers("Loved by teams")).not.toBe(maskNumbers("Trusted by teams"));
  });
});

describe("extractCompanyName", () => {
  const title = (text: string) => `<title>${text}</title>`;

  it.each([
    [
      "its organisation data first",
      page(
        "",
        "https://acme.com/",
        `${title("Home")}<script type="application/ld+json">{"@type":"Organization","name":"Acme Corp"}</script><meta property="og:site_name" content="Acme">`,
      ),
      "Acme Corp",
    ],
    [
      "the site name it gives social networks",
      page(
        "",
        "https://acme.com/",
        `${title("Home")}<meta property="og:site_name" content=" Acme  Labs ">`,
      ),
      "Acme Labs",
    ],
    [
      "the title's part named like the domain",
      page("", "https://www.rival-labs.io/", title("Ship faster | Rival Labs")),
      "Rival Labs",
    ],
    [
      "the title's part the copyright line starts with",
      page(
        "<footer><p>© 2019–2025 Blitz GmbH. All rights reserved.</p></footer>",
        "https://bl.it/",
        title("Blitz: sites in minutes"),
      ),
      "Blitz",
    ],
    [
      "the copyright holder alone",
      page("<footer><small>© Hooli, Inc</small></footer>", "https://x.io/", title("Welcome")),
      "Hooli",
    ],
    [
      "nothing when the site does not say",
      page("<h1>Hi</h1>", "https://x.io/", title("Welcome | Home")),
      null,
    ],
  ])("takes %s", (_, home, name) => {
    expect(extractCompanyName(home)).toBe(name);
  });
});

describe("discoverPages", () => {
  it("finds pages by link path or text on the same site, then adds the usual paths", () => {
    const home = page(`
      <a href="/en/plans">Plans</a>
      <a href="https://www.acme.com/join-us">Work with us</a>
      <a href="https://blog.acme.com/">Our blog</a>
      <a href="https://other.com/pricing">Pricing elsewhere</a>
      <a href="/resources/pricing-guide">Read our pricing guide</a>`);
    expect(discoverPages(home)).toEqual({
      pricing: ["https://acme.com/en/plans", "https://acme.com/pricing", "https://acme.com/plans"],
      careers: [
        "https://www.acme.com/join-us",
        "https://acme.com/careers",
        "https://acme.com/jobs",
      ],
      blog: ["https://blog.acme.com/", "https://acme.com/blog"],
    });
  });
});

describe("the markup marketers' sites use", () => {
  it("reads a role's team and location from labels and data attributes", () => {
    const page = loadHtml(
      "https://acme.com/careers",
      `<main><ul>
        <li><a href="/careers/1"><span class="job-title">Head of Product Marketing</span>
          <span class="team">Marketing</span> <span class="location">London</span></a></li>
        <li data-department="Sales" data-location="Paris"><a href="/careers/2">Account Executive</a></li>
      </ul></main>`,
    );
    expect(extractJobs(page)).toEqual([
      {
        title: "Head of Product Marketing",
        team: "Marketing",
        location: "London",
        url: "https://acme.com/careers/1",
      },
      {
        title: "Account Executive",
        team: "Sales",
        location: "Paris",
        url: "https://acme.com/careers/2",
      },
    ]);
  });

  it.each(["Contact us", "Talk to sales →", "Custom", "Contact our sales team", "Get in touch"])(
    "reads a plan labelled %s as contact sales",
    (label) => {
      const page = loadHtml(
        "https://acme.com/pricing",
        `<main><div class="plans">
          <div><h3>Basic</h3><p>$10/mo</p><a>Start</a></div>
          <div><h3>Pro</h3><p>$20/mo</p><a>Start</a></div>
          <div><h3>Enterprise</h3><p>Tailored to you</p><a href="/contact">${label}</a></div>
        </div></main>`,
      );
      expect(extractPlans(page).at(-1)).toEqual({
        name: "Enterprise",
        price: null,
        currency: null,
        period: null,
        perSeat: false,
        contactSales: true,
      });
    },
  );
});
