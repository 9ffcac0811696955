/**
 * Cookie-consent overlays, removed before a page is read (readable.ts, in jsdom) and before a
 * rendered page is captured (browser.ts, in the page), so banner text never reaches an index, a
 * diff or a screenshot. The consent platforms' own containers are named; any other element whose
 * id or class speaks of cookies or consent and whose short text mentions cookies goes too.
 */

/** The containers of the common consent platforms. */
export const CONSENT_SELECTORS: readonly string[] = [
  "#onetrust-consent-sdk",
  "#onetrust-banner-sdk",
  "#CybotCookiebotDialog",
  "#CybotCookiebotDialogBodyUnderlay",
  "#usercentrics-root",
  "#didomi-host",
  ".qc-cmp2-container",
  "#truste-consent-track",
  "#trustarc-banner-overlay",
  ".osano-cm-window",
  "#cmpbox",
  "#cmpbox2",
  ".cc-window",
  "#cookie-law-info-bar",
  ".fc-consent-root",
  "#iubenda-cs-banner",
  "#hs-eu-cookie-confirmation",
  "[id^='sp_message_container']",
];

/**
 * Removes consent overlays from `doc` and answers how many it removed. Self-contained (it uses
 * nothing outside its body) so that the browser can run its source in the page.
 */
export function removeConsentOverlays(doc: Document, selectors: readonly string[]): number {
  /** Longer than this, an element that mentions cookies is content (a cookie policy), not a banner. */
  const bannerChars = 2000;
  let removed = 0;
  for (const el of Array.from(doc.querySelectorAll(selectors.join(",")))) {
    if (!el.isConnected) continue;
    el.remove();
    removed++;
  }
  const named = "[id*='cookie' i],[class*='cookie' i],[id*='consent' i],[class*='consent' i]";
  for (const el of Array.from(doc.querySelectorAll(named))) {
    if (!el.isConnected || el === doc.body || el === doc.documentElement) continue;
    const text = (el.textContent ?? "").toLowerCase();
    if (text.length < bannerChars && text.includes("cookie")) {
      el.remove();
      removed++;
    }
  }
  return removed;
}
