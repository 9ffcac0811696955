import { type HtmlPage, linksOf } from "./extract/html.js";

/** The kinds of page a check reads besides the homepage. */
export type PageKind = "pricing" | "careers" | "blog";

/** For each kind, the URLs worth trying, best first. */
export type PageCandidates = Record<PageKind, string[]>;

interface Rule {
  /** The last path segment of such a page. */
  path: RegExp;
  /** The text of a link to such a page. */
  text: RegExp;
  /** Where such pages usually are when nothing links to them. */
  guesses: string[];
}

const RULES: Record<PageKind, Rule> = {
  pricing: {
    path: /^(?:pricing|plans|prices|plans-and-pricing|pricing-plans)$/i,
    text: /^(?:pricing|plans|prices|plans (?:&|and) pricing|pricing (?:&|and) plans|see (?:pricing|plans))$/i,
    guesses: ["/pricing", "/plans"],
  },
  careers: {
    path: /^(?:careers?|jobs|join-us|work-with-us|hiring|open-positions|openings)$/i,
    text: /^(?:careers?|jobs|join (?:us|our team|the team)|work with us|we'?re hiring|open (?:positions|roles))$/i,
    guesses: ["/careers", "/jobs"],
  },
  blog: {
    path: /^(?:blog|news|newsroom|articles|insights|updates|stories)$/i,
    text: /^(?:blog|news|newsroom|articles|insights|updates|stories|our blog|latest news)$/i,
    guesses: ["/blog"],
  },
};

const bare = (host: string) => host.replace(/^www\./, "");

/** The competitor's own site: same host give or take `www.`, or a subdomain (`blog.acme.com`). */
function isSameSite(url: URL, home: URL): boolean {
  const host = bare(url.hostname);
  const base = bare(home.hostname);
  return url.port === home.port && (host === base || host.endsWith(`.${base}`));
}

/**
 * Finds the pricing, careers and blog pages from the homepage's links (by path or link text,
 * locale prefixes allowed), then adds the usual paths for kinds nothing links to.
 */
export function discoverPages(home: HtmlPage): PageCandidates {
  const homeUrl = new URL(home.url);
  const links = linksOf(home).filter((link) => isSameSite(new URL(link.url), homeUrl));
  const candidates = {} as PageCandidates;
  for (const [kind, rule] of Object.entries(RULES) as Array<[PageKind, Rule]>) {
    const found = links
      .filter((link) => {
        const segments = new URL(link.url).pathname.split("/").filter(Boolean);
        const last = segments.at(-1) ?? "";
        return (segments.length <= 2 && rule.path.test(last)) || rule.text.test(link.text);
      })
      .map((link) => link.url);
    const guesses = rule.guesses.map((path) => new URL(path, homeUrl).href);
    candidates[kind] = [...new Set([...found, ...guesses])];
  }
  return candidates;
}
