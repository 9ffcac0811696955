import { describe, expect, it } from "vitest";
import { CrawlScope, pathPattern, seedFolder } from "../../lib/knowledge/crawl/scope.js";

const settings = {
  seedUrl: "https://www.example.com/docs",
  includeSubdomains: false,
  includePaths: [],
  excludePaths: [],
  maxDepth: 3,
};

describe("crawl scope", () => {
  it("stays on the seed's host, www or not, and its port", () => {
    const scope = new CrawlScope(settings);
    expect(scope.judge("https://example.com/docs/a", 1)).toBeUndefined();
    expect(scope.judge("http://www.example.com/docs/a", 1)).toBeUndefined();
    expect(scope.judge("https://blog.example.com/docs/a", 1)).toBe("outside");
    expect(scope.judge("https://example.com:8443/docs/a", 1)).toBe("outside");
    expect(scope.judge("https://example.org/docs/a", 1)).toBe("outside");
    expect(scope.judge("https://notexample.com/docs/a", 1)).toBe("outside");
  });

  it("takes subdomains when asked", () => {
    const scope = new CrawlScope({ ...settings, includeSubdomains: true });
    expect(scope.judge("https://blog.example.com/docs/a", 1)).toBeUndefined();
    expect(scope.judge("https://badexample.com/docs/a", 1)).toBe("outside");
  });

  it("stays under the seed's folder unless includePaths say otherwise", () => {
    const scope = new CrawlScope(settings);
    expect(scope.judge("https://example.com/docs", 1)).toBeUndefined();
    expect(scope.judge("https://example.com/docs/x/y", 1)).toBeUndefined();
    expect(scope.judge("https://example.com/docsearch", 1)).toBe("filter");
    expect(scope.judge("https://example.com/pricing", 1)).toBe("filter");

    const wide = new CrawlScope({
      ...settings,
      includePaths: ["/blog", "/guides/*/intro"],
      excludePaths: ["/blog/drafts", "*.pdf"],
    });
    expect(wide.judge("https://example.com/blog/post", 1)).toBeUndefined();
    expect(wide.judge("https://example.com/guides/setup/intro", 1)).toBeUndefined();
    expect(wide.judge("https://example.com/docs/a", 1)).toBe("filter");
    expect(wide.judge("https://example.com/blog/drafts/1", 1)).toBe("filter");
    expect(wide.judge("https://example.com/blog/deck.pdf", 1)).toBe("filter");
  });

  it("catches traps and depth", () => {
    const scope = new CrawlScope(settings);
    expect(scope.judge("https://example.com/docs/a/b/a/b/a/b", 1)).toBe("trap");
    expect(scope.judge(`https://example.com/docs/${"x/".repeat(40)}`, 1)).toBe("trap");
    expect(scope.judge(`https://example.com/docs?${"p=1&".repeat(13)}`, 1)).toBe("trap");
    expect(scope.judge(`https://example.com/docs/${"a".repeat(1100)}`, 1)).toBe("trap");
    expect(scope.judge("https://example.com/docs/deep", 4)).toBe("depth");
  });

  it("reads path patterns and seed folders as documented", () => {
    expect(pathPattern("/blog")("/blog")).toBe(true);
    expect(pathPattern("/blog/")("/blog/x")).toBe(true);
    expect(pathPattern("/blog/")("/blog")).toBe(true);
    expect(pathPattern("/blog")("/blogroll")).toBe(false);
    expect(pathPattern("/blog*")("/blogroll")).toBe(true);
    expect(pathPattern("/blog*")("/blog")).toBe(true);
    expect(pathPattern("/a.b")("/aXb")).toBe(false);
    expect(pathPattern("/a+(b)")("/a+(b)/c")).toBe(true);
    expect(pathPattern("/*/intro")("/guides/setup/intro")).toBe(true);
    expect(pathPattern("/*/intro")("/guides/introduction")).toBe(false);
    expect(pathPattern("/*a*b")("/xaxbx")).toBe(false);
    expect(pathPattern("/*a*b")("/xaxb/y")).toBe(true);
    expect(pathPattern("*.pdf")("/deck.pdf.html")).toBe(false);
    expect(pathPattern("/")("/anything")).toBe(true);
    expect(seedFolder("/")).toBe("/");
    expect(seedFolder("/docs/")).toBe("/docs");
    expect(seedFolder("/docs/index.html")).toBe("/docs");
    expect(seedFolder("/index.php")).toBe("/");
    expect(seedFolder("/v1.2/docs")).toBe("/v1.2/docs");
  });

  it.each([
    ["/*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", `/${"a".repeat(1000)}`],
    [`/${"*a".repeat(12)}*b`, `/${"a".repeat(41)}`],
    [`/${"*".repeat(16)}b`, `/${"a".repeat(31)}`],
  ])("matches %s in linear time, however many stars", (pattern, path) => {
    const scope = new CrawlScope({ ...settings, includePaths: [pattern], excludePaths: [pattern] });
    const started = performance.now();
    expect(scope.pathAllowed(path)).toBe(false);
    expect(pathPattern(pattern)(`${path}b`)).toBe(true);
    expect(performance.now() - started).toBeLessThan(10);
  });
});
