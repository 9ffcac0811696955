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

  /**
   * Patterns a backtracking matcher takes exponential time on, with a number of stars, against a
   * path they never match: `/` and `n` `a`s (the last case is the one regex.test.ts once timed).
   */
  it.each([
    ["/*a*a…*a*b", 16, (stars: number) => `/${"*a".repeat(stars)}*b`, 1000],
    ["/*a*a…*a*b", 12, (stars: number) => `/${"*a".repeat(stars)}*b`, 41],
    ["/**…*b", 16, (stars: number) => `/${"*".repeat(stars)}b`, 31],
    ["/*a*a…*a*b", 99, (stars: number) => `/${"*a".repeat(stars)}*b`, 100_000],
  ])("matches %s with %i stars in linear time", (_shape, stars, build, n) => {
    const pattern = build(stars);
    const path = (length: number) => `/${"a".repeat(length)}`;
    // The matcher's steps are counted, not timed: linear, a path twice as long, or twice the
    // stars, cost the same per character of pattern and path; backtracking, far more.
    const base = stepsPerChar(pattern, path(n));
    expect(stepsPerChar(pattern, path(2 * n))).toBeLessThanOrEqual(LINEAR * base);
    expect(stepsPerChar(build(2 * stars), path(n))).toBeLessThanOrEqual(LINEAR * base);
    const scope = new CrawlScope({ ...settings, includePaths: [pattern], excludePaths: [pattern] });
    expect(scope.pathAllowed(path(n))).toBe(false);
    expect(pathPattern(pattern)(`${path(n)}b`)).toBe(true);
  });
});

/** A case twice as large may cost this much more per character: linear, ~1.0. */
const LINEAR = 1.25;
/** Steps per character of pattern and path past which matching stops: a linear matcher takes ~2. */
const MAX_STEPS_PER_CHAR = 64;

/** The steps `pathPattern` takes to match a path, per character of pattern and path. */
function stepsPerChar(pattern: string, path: string): number {
  const chars = pattern.length + path.length;
  let steps = 0;
  pathPattern(pattern, () => {
    steps++;
    if (steps > MAX_STEPS_PER_CHAR * chars) {
      throw new Error(`${pattern} took over ${MAX_STEPS_PER_CHAR} steps per character`);
    }
  })(path);
  // Each case reads the whole path: a matcher that reports fewer steps is not counted.
  expect(steps).toBeGreaterThanOrEqual(path.length);
  return steps / chars;
}
