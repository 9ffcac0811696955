import type { PageProfile } from "./profile.js";

/**
 * Two verdicts on a page's profile (profile.ts): whether it needs scripts to show its content, and
 * whether it is a wall (a bot challenge, a captcha, a block or login page) rather than content.
 * Both are deliberately narrow: a page with a real amount of text is never rendered under `auto`
 * and never called blocked for a captcha on its contact form.
 */

/** A page with at least this many words shows its content without scripts. */
const CONTENT_WORDS = 300;
/** Fewer words than this beside any script: the page is filled in by script. */
const SHELL_WORDS = 50;
/** Inline script this large beside fewer than `CONTENT_WORDS` words: an app that renders itself. */
const LARGE_INLINE_SCRIPT = 50_000;
/** A wall says little: a page with more words than this is content, whatever widget it embeds. */
const WALL_WORDS = 150;

/** Why a page needs scripts to show its content, or undefined when its HTML shows it. */
export function needsScripts(profile: PageProfile): string | undefined {
  if (profile.words >= CONTENT_WORDS) return undefined;
  if (profile.emptyRoot) return `its app root (#${profile.emptyRoot}) is empty`;
  if (profile.noscriptAsksForScripts) return "its <noscript> asks for JavaScript";
  if (profile.scripts > 0 && profile.words < SHELL_WORDS) {
    return `it shows ${profile.words} words beside ${profile.scripts} scripts`;
  }
  if (profile.inlineScriptBytes >= LARGE_INLINE_SCRIPT) {
    return `it shows ${profile.words} words beside ${Math.round(profile.inlineScriptBytes / 1000)} KB of script`;
  }
  return undefined;
}

/**
 * Markers of the common bot-protection vendors' challenge pages. Some also load on the real pages
 * of a site they protect, so they count only on a page that says little else.
 */
const VENDOR_MARKERS: Array<[string, string]> = [
  ["_cf_chl_opt", "a Cloudflare challenge"],
  ["cdn-cgi/challenge-platform", "a Cloudflare challenge"],
  ["cf-browser-verification", "a Cloudflare challenge"],
  ["captcha-delivery.com", "a DataDome captcha"],
  ["px-captcha", "a PerimeterX (HUMAN) captcha"],
  ["_incapsula_resource", "an Imperva (Incapsula) block"],
  ["incapsula incident id", "an Imperva (Incapsula) block"],
  ["awswafintegration", "an AWS WAF challenge"],
  ["sucuri website firewall", "a Sucuri firewall block"],
  ["kpsdk", "a Kasada challenge"],
];

/** Titles of challenge and block pages. */
const WALL_TITLES: Array<[string, string]> = [
  ["just a moment", "a Cloudflare challenge (“Just a moment…”)"],
  ["attention required! | cloudflare", "a Cloudflare block (“Attention Required!”)"],
  ["checking your browser", "a browser check (“Checking your browser”)"],
  ["access denied", "an “Access denied” page"],
  ["request blocked", "a “Request blocked” page"],
  ["are you a robot", "a robot check (“Are you a robot?”)"],
  ["are you human", "a robot check (“Are you human?”)"],
  ["human verification", "a human verification page"],
  ["security check", "a security check page"],
  ["bot verification", "a bot verification page"],
  ["pardon our interruption", "a bot wall (“Pardon Our Interruption”)"],
];

/** Widgets that only a challenge page shows on their own. */
const CAPTCHAS = ["g-recaptcha", "recaptcha/api.js", "h-captcha", "hcaptcha.com", "cf-turnstile"];

const LOGIN_TITLES = ["sign in", "log in", "login", "signin", "sign-in", "log-in"];

/** Statuses a wall answers with; a challenge header on any of them is a wall whatever the body. */
export const WALL_STATUSES = new Set([401, 403, 429, 503]);

/**
 * What the page shows instead of its content (“a Cloudflare challenge”), or undefined when it is
 * no wall. `challengeHeader`: the response's `cf-mitigated` (Cloudflare says `challenge`).
 */
export function blockedBy(profile: PageProfile, challengeHeader?: string): string | undefined {
  if (challengeHeader?.toLowerCase() === "challenge") return "a Cloudflare challenge";
  if (profile.words > WALL_WORDS) return undefined;
  for (const [marker, what] of VENDOR_MARKERS) {
    if (profile.lower.includes(marker)) return what;
  }
  for (const [title, what] of WALL_TITLES) {
    if (profile.title.includes(title)) return what;
  }
  if (CAPTCHAS.some((captcha) => profile.lower.includes(captcha))) return "a captcha";
  if (profile.passwordField && LOGIN_TITLES.some((login) => profile.title.includes(login))) {
    return "a login wall";
  }
  return undefined;
}
