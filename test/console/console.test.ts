import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page, Request, Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import { baseSite, type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";
import { FakeOpenAI } from "../support/fake-openai.js";
import {
  type LocalProcess,
  startLocalProcess,
  stopLocalProcess,
} from "../support/local-process.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

/**
 * The console in a real browser (Debian's Chromium driven by Playwright) against the local runtime
 * started as `npm start` starts it, with the fake model and a competitor's site on loopback. It
 * walks the marketer's path through every screen and saves a screenshot of each.
 */

/**
 * Screenshots of every screen: into the committed folder README shows with
 * `CONSOLE_SCREENSHOTS=update`, otherwise into a temporary one (ids and times differ each run).
 */
const SHOTS =
  process.env.CONSOLE_SCREENSHOTS === "update"
    ? join(import.meta.dirname, "screenshots")
    : join(tmpdir(), "kb-console-screenshots");
const API_KEY = "console-e2e-key-0123456789abcdef";
/** The page and its two assets (64 KB together at most, assets.test.ts), uncompressed. */
const PAGE_BUDGET_BYTES = 66 * 1024;
const LAUNCH_PLAN = "# Launch plan\nThe spring launch targets mid-market SaaS teams in Europe.";
const PRICING = "# Pricing\nThe Growth plan costs $99 per month and includes unlimited seats.";

let dataDir: string;
let server: LocalProcess;
let model: FakeOpenAI;
let rival: CompetitorSite;
let docsSite: Site;
let browser: Browser;
let page: Page;
/** Errors thrown in the page: none may happen on any screen. */
const pageErrors: string[] = [];
/** The competitor's page, as its link on Home and the list point at it. */
let competitorHash = "";

const shoot = (name: string) =>
  page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const go = (screen: string) => page.getByRole("link", { name: screen, exact: true }).click();
/** Elements of the screen on show (the others stay in the page, hidden). */
const onScreen = (css: string) => page.locator(`section.screen:not([hidden]) ${css}`);
const sourceCard = (name: string) => page.locator("li.source").filter({ hasText: name });

/** axe-core, run in the page as a browser extension would run it. */
const AXE = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
type Axe = typeof import("axe-core");

/**
 * The serious and critical accessibility violations axe-core finds on the screen on show, one
 * line each with the elements at fault (the hidden screens are not rendered, so axe skips them),
 * and a screen without exactly one level-one heading (axe's moderate page-has-heading-one counts
 * none; a second would say two pages are shown). It is evaluated over the debugging protocol,
 * which the page's content security policy does not govern, so the policy stays as strict as it
 * is served.
 */
async function seriousViolations(): Promise<string[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE);
  return page.evaluate(async () => {
    const { axe } = window as unknown as { axe: Axe };
    const { violations } = await axe.run(document, { resultTypes: ["violations"] });
    const ones = [...document.querySelectorAll("h1")].filter((h) => h.getClientRects().length);
    return violations
      .filter(
        (v) => v.impact === "serious" || v.impact === "critical" || v.id === "page-has-heading-one",
      )
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)
      .concat(ones.length === 1 ? [] : [`${ones.length} level-one headings`]);
  });
}

/** Every form control on screen has a label a screen reader announces. */
async function unlabelledControls(): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll("input, select, textarea, button")]
      .filter((el) => (el as HTMLElement).offsetParent !== null)
      .filter((el) => {
        const labels = (el as HTMLInputElement).labels;
        const named =
          (labels && labels.length > 0) ||
          el.getAttribute("aria-label") ||
          (el.tagName === "BUTTON" && el.textContent?.trim());
        return !named;
      })
      .map((el) => el.outerHTML.slice(0, 120)),
  );
}

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  dataDir = await mkdtemp(join(tmpdir(), "kb-console-"));
  [model, rival, docsSite] = await Promise.all([
    FakeOpenAI.start(),
    startCompetitorSite(baseSite()),
    startSite({
      "/docs": respond(
        htmlPage("Docs", `<h1>Docs</h1>${prose("Docs")}<a href="/docs/setup">Setup</a>`),
      ),
      "/docs/setup": respond(htmlPage("Setup", `<h1>Setup</h1>${prose("Setup")}`)),
    }),
  ]);
  [server, browser] = await Promise.all([
    startLocalProcess(dataDir, {
      API_KEY,
      ALLOW_PRIVATE_URLS: "true",
      CHECK_POLITENESS_MS: "0",
      CRAWL_POLITENESS_MS: "0",
      OPENAI_API_KEY: "fake-key",
      OPENAI_BASE_URL: model.baseURL,
      POWERTOOLS_LOG_LEVEL: "WARN",
    }),
    launchBrowser(),
  ]);
  page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  page.on("pageerror", (error) => pageErrors.push(error.message));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (server) await stopLocalProcess(server);
  await Promise.all([model?.close(), rival?.close(), docsSite?.close()]);
  await rm(dataDir, { recursive: true, force: true });
});

describe("the console in Chromium", () => {
  it("loads from the service's root in three small requests of its own, none it cannot serve", async () => {
    // What makes the page quick, asserted instead of timed (a load time is a bench figure): the
    // document, its script and its stylesheet, from the service itself (no CDN, font or other
    // host), under the assets' budget (assets.test.ts), and nothing else before the key is asked.
    const requested: string[] = [];
    const responses: Response[] = [];
    const failed: string[] = [];
    const onRequest = (r: Request) => requested.push(r.url());
    const onFailure = (r: Request) => failed.push(`${r.failure()?.errorText} ${r.url()}`);
    const onResponse = (r: Response) => {
      responses.push(r);
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    };
    page.on("request", onRequest).on("requestfailed", onFailure).on("response", onResponse);
    try {
      await page.goto(`${server.url}/`);
      await page.getByLabel("API key").waitFor();
    } finally {
      page.off("request", onRequest).off("requestfailed", onFailure).off("response", onResponse);
    }
    expect(failed).toEqual([]);
    expect(requested.sort()).toEqual(
      ["/", "/console/app.css", "/console/app.js"].map((path) => `${server.url}${path}`),
    );
    const bodies = await Promise.all(responses.map((r) => r.body()));
    const bytes = bodies.reduce((sum, body) => sum + body.length, 0);
    expect(bytes).toBeLessThan(PAGE_BUDGET_BYTES);
  });

  it("says in words what a wrong key means, with the API's code kept for support", async () => {
    // Where a key comes from is on the sign-in page itself.
    expect(await page.locator(".sign-in .hint").innerText()).toContain("npm run keys");
    await page.getByLabel("API key").fill("not-a-real-key-0123456789");
    await page.getByRole("button", { name: "Sign in" }).click();
    const alert = page.getByRole("alert");
    await expect.poll(() => alert.innerText()).toContain("This key was not accepted");
    expect(await alert.locator("details").textContent()).toContain("unauthorized (HTTP 401)");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await shoot("sign-in-error");
    expect(await seriousViolations()).toEqual([]);
  });

  it("signs in with the key kept in the tab's session only", async () => {
    await page.getByLabel("API key").fill(API_KEY);
    await page.getByLabel("API key").press("Enter");
    // Home first: nothing changed yet, nothing failed, nothing running.
    await page.getByRole("heading", { name: "Home", exact: true }).waitFor();
    const changes = page.getByRole("list", { name: "Changes this week" });
    await expect.poll(() => changes.innerText()).toContain("No competitor changed anything");
    expect(page.url()).not.toContain(API_KEY);
    expect(await page.evaluate(() => sessionStorage.getItem("kbi.apiKey"))).toBe(API_KEY);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await unlabelledControls()).toEqual([]);
    // From the keyboard: the first Tab reaches the skip link, which moves focus to the screen.
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await page.keyboard.press("Enter");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
    await go("Knowledge");
  });

  it("adds a text source and shows it becoming indexed", async () => {
    await page.getByLabel("Name", { exact: true }).first().fill("Pricing");
    await page.getByLabel("Text (required)").fill(PRICING);
    await page.getByRole("button", { name: "Add text" }).click();
    await sourceCard("Pricing").locator(".badge.indexed").waitFor({ timeout: 20_000 });
    // Renamed in place, from the keyboard.
    await sourceCard("Pricing").getByRole("button", { name: "Rename" }).click();
    await page.getByLabel("New name for Pricing").fill("Pricing page");
    await page.getByLabel("New name for Pricing").press("Enter");
    await sourceCard("Pricing page").locator(".badge.indexed").waitFor();
  });

  it("uploads a dropped file through the presigned upload, with its progress", async () => {
    const files = await page.evaluateHandle((text) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([text], "launch-plan.md", { type: "text/markdown" }));
      return transfer;
    }, LAUNCH_PLAN);
    await page.dispatchEvent(".drop", "drop", { dataTransfer: files });
    const upload = page.locator(".uploads li").filter({ hasText: "launch-plan.md" });
    await expect
      .poll(() => upload.locator("progress").evaluate((p) => (p as HTMLProgressElement).value))
      .toBe(100);
    await sourceCard("launch-plan.md").locator(".badge.indexed").waitFor({ timeout: 20_000 });
    // The upload's line follows its source to the end, in words, and is not clipped.
    await expect.poll(() => upload.locator(".state").innerText()).toBe("Ready");
    expect(
      await upload.locator(".state").evaluate((el) => el.scrollWidth <= el.clientWidth + 1),
    ).toBe(true);
    expect(await sourceCard("launch-plan.md").innerText()).toMatch(/\b1 passage\b/);
    await shoot("knowledge");
    expect(await seriousViolations()).toEqual([]);
  });

  it("crawls a site, showing its progress and per-URL report", async () => {
    await page.getByLabel("Seed URL (required)").fill(`${docsSite.origin}/docs`);
    await page.getByRole("button", { name: "Start crawl" }).click();
    const crawl = page.getByRole("list", { name: "Crawls" }).locator("li").first();
    await crawl.locator(".badge.completed").waitFor({ timeout: 20_000 });
    expect(await crawl.innerText()).toContain("2 indexed");
    await crawl.getByRole("button", { name: "Per-URL report" }).click();
    await expect.poll(() => crawl.locator("tbody tr").count()).toBe(2);
    expect(await crawl.locator("tbody").innerText()).toContain(`${docsSite.origin}/docs/setup`);
  }, 60_000);

  it("searches and shows ranked passages with their source and score", async () => {
    await go("Search and chat");
    await page.getByLabel("Query").fill("growth plan price");
    await page.getByRole("button", { name: "Search" }).click();
    const first = page.getByRole("list", { name: "Search results" }).locator("li").first();
    await expect.poll(() => first.innerText()).toContain("Pricing");
    expect(await first.innerText()).toMatch(/score 0\.\d{3}/);
  });

  it("streams a chat answer whose numbered citation links to the source", async () => {
    model.enqueue("chat", { text: "The Growth plan costs $99 per month [1]." });
    await page.getByLabel("Message").fill("How much is the Growth plan?");
    await page.getByRole("button", { name: "Send" }).click();
    const answer = page.locator(".turn.assistant").last();
    const citation = answer.locator("sup.cite a");
    await citation.waitFor();
    expect(await citation.innerText()).toBe("1");
    expect(await answer.innerText()).toContain("The Growth plan costs $99 per month");
    expect(await answer.locator(".citations li a").innerText()).toBe("Pricing page");
    // A citation leads to its source in the knowledge screen.
    expect(await citation.getAttribute("href")).toMatch(/^#\/knowledge\?source=kb_/);
    await shoot("search-and-chat");
    expect(await seriousViolations()).toEqual([]);
  });

  it("shows today's usage of each quota, counting the work done so far", async () => {
    await go("Settings");
    const quota = (name: string) => page.getByRole("progressbar", { name: `${name} used today` });
    // One chat answer is one model call; the text's and the dropped file's bytes went through the
    // upload quota.
    await expect
      .poll(() => quota("Model calls").evaluate((p) => (p as HTMLProgressElement).value), {
        timeout: 10_000,
      })
      .toBe(1);
    const usage = page.getByRole("list", { name: "Quotas" });
    expect(await usage.locator("[data-quota=model_calls]").innerText()).toContain("1 / 2,000");
    const uploaded = Buffer.byteLength(PRICING) + Buffer.byteLength(LAUNCH_PLAN);
    expect(await usage.locator("[data-quota=upload_bytes]").innerText()).toContain(
      `${uploaded} B / 1 GB`,
    );
    expect(await quota("Competitor checks").evaluate((p) => (p as HTMLProgressElement).value)).toBe(
      0,
    );
    expect(await page.getByRole("region", { name: "Usage today" }).innerText()).toMatch(/resets /);
  });

  it("without a brand profile, says so and leads to the screen that sets it up", async () => {
    await go("Intel");
    await page.getByLabel("Module", { exact: true }).first().selectOption("persona");
    await page.getByLabel("Segment", { exact: true }).fill("Heads of growth at B2B SaaS companies");
    await page.getByRole("button", { name: "Generate" }).click();
    const alert = onScreen("[role=alert]");
    await expect.poll(() => alert.innerText()).toContain("Your brand profile is not set up yet");
    expect(await alert.innerText()).not.toMatch(/PUT|\/api\/|brand_profile_missing/);
    await alert.getByRole("link", { name: "Set up your brand profile" }).click();
    await page.getByRole("heading", { name: "Settings", exact: true }).waitFor();
  });

  it("saves a brand profile, then generates, reads and saves a persona", async () => {
    await page.getByLabel("Name (required)").fill("Acme Analytics");
    await page.getByLabel("Description (required)").fill("Product analytics for SaaS teams.");
    await page.getByLabel("Value props").fill("Set up in minutes\nPrivacy first");
    await page.getByLabel("Products").fill("Team: $39 a month");
    // The rival by its address and by the name its site states, and one never tracked.
    await page.getByLabel("Competitors", { exact: true }).fill(`${rival.origin}\nacme\nMixpanel`);
    await page.getByRole("button", { name: "Save brand profile" }).click();
    await expect
      .poll(() => page.getByRole("status").first().innerText())
      .toBe("Brand profile saved");
    // None is tracked yet: each offers the add form.
    const yours = page.getByRole("list", { name: "Your competitors" });
    await expect
      .poll(() => yours.getByRole("link", { name: "Track this competitor" }).count())
      .toBe(3);
    await shoot("settings");
    expect(await seriousViolations()).toEqual([]);

    await go("Intel");
    await page.getByLabel("Module", { exact: true }).first().selectOption("persona");
    await page.getByLabel("Segment", { exact: true }).fill("Heads of growth at B2B SaaS companies");
    await page.getByRole("button", { name: "Generate" }).click();
    const document = onScreen(".output article.document");
    await document.waitFor({ timeout: 25_000 });
    // Rendered as a document: headings and lists, not JSON.
    expect(await document.locator("h3").count()).toBeGreaterThan(2);
    expect(await document.innerText()).not.toContain("{");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect
      .poll(() => onScreen(".output [role=status]").innerText())
      .toBe("Saved to your library");
    const saved = page.getByRole("list", { name: "Saved artifacts" }).locator("li");
    await expect.poll(() => saved.count()).toBe(1);
    // A saved artifact downloads as Markdown: its title, then its sections as headings.
    const [file] = await Promise.all([
      page.waitForEvent("download"),
      saved.first().getByRole("button", { name: "Download (Markdown)" }).click(),
    ]);
    expect(file.suggestedFilename()).toMatch(/\.md$/);
    const markdown = await readFile((await file.path()) ?? "", "utf8");
    expect(markdown).toMatch(/^# .+\n\n/);
    expect(markdown).toMatch(/^## /m);
    // And as DOCX, written by the server: a zip (PK) named after the title.
    const [docx] = await Promise.all([
      page.waitForEvent("download"),
      saved.first().getByRole("button", { name: "Download (Word)" }).click(),
    ]);
    expect(docx.suggestedFilename()).toBe(file.suggestedFilename().replace(/\.md$/, ".docx"));
    expect((await readFile((await docx.path()) ?? "")).subarray(0, 2).toString()).toBe("PK");
    expect(await unlabelledControls()).toEqual([]);
    await shoot("intel");
    expect(await seriousViolations()).toEqual([]);
  });

  it("adds a competitor, checks it, and shows its events by severity", async () => {
    // Where the model writes events' briefs, it writes these.
    model.fallback("chat", (request) => ({
      text: JSON.stringify(request.body).includes("$49")
        ? "Their Pro plan now costs $49 a month, $20 more than before: ours is now the cheaper one, say so in sales calls."
        : "They are writing about pricing: expect prospects to compare plans.",
    }));
    await go("Competitors");
    // Focus moves to the new screen's heading.
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.outerHTML.slice(0, 40)))
      .toMatch(/^<h2 id="competitors-title"/);
    // Tracked from the brand profile's list: the add form opens filled with it.
    await go("Settings");
    await page
      .getByRole("list", { name: "Your competitors" })
      .locator("li")
      .filter({ hasText: rival.origin })
      .getByRole("link", { name: "Track this competitor" })
      .click();
    const domain = page.getByLabel("Domain or URL (required)");
    await expect.poll(() => domain.inputValue()).toBe(rival.origin);
    expect(await domain.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.getByRole("button", { name: "Add", exact: true }).click();
    const card = page.getByRole("list", { name: "Competitors" }).locator("li").first();
    await card.getByRole("button", { name: "Check now" }).click();
    await expect.poll(() => card.innerText(), { timeout: 25_000 }).not.toContain("last checked —");
    // The rival raises a price (by more than 25%: critical) and posts on its blog (low).
    rival.state.plans[1] = { name: "Pro", price: "$49", features: ["10 sites", "Analytics"] };
    rival.state.posts.push({ slug: "new-pricing", title: "Our new pricing", date: "2025-03-01" });
    await card.getByRole("button", { name: "Check now" }).click();
    const events = page.getByRole("list", { name: "Events" }).locator("li.event");
    await expect.poll(() => events.count(), { timeout: 25_000 }).toBeGreaterThanOrEqual(2);
    await page.getByLabel("Severity").selectOption("critical");
    await expect
      .poll(() => events.evaluateAll((els) => els.map((e) => e.getAttribute("data-severity"))))
      .toEqual(["critical"]);
    const read = events.first().getByLabel("Read");
    await read.check();
    await expect.poll(() => events.first().getAttribute("class")).not.toContain("unread");
    await page.getByLabel("Severity").selectOption("");
    await card.getByRole("button", { name: "Snapshot" }).click();
    const snapshot = onScreen(".output article.document");
    await snapshot.waitFor();
    // Where the API reports what it extracted, the plans and prices read as a table.
    const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      components: { schemas: Record<string, unknown> };
    };
    if (spec.components.schemas.CompetitorState) {
      await expect.poll(() => snapshot.locator("table").first().innerText()).toContain("$49");
    }
    await shoot("competitors");
    expect(await seriousViolations()).toEqual([]);
  }, 90_000);

  it("opens a page per competitor: prices as a chart, changes side by side, alerts, a battlecard", async () => {
    const card = page.getByRole("list", { name: "Competitors" }).locator("li").first();
    await card.getByRole("link").first().click();
    await page.getByRole("heading", { name: "What changed" }).waitFor();
    competitorHash = new URL(page.url()).hash;
    // The chart is the console's own SVG: a marker per price, each line named at its end, and the
    // same figures as a table.
    const chart = onScreen("svg.chart");
    await chart.waitFor();
    expect(await chart.locator(".series > text").allTextContents()).toContain("Pro");
    expect(await chart.locator(".series").first().locator("circle").count()).toBeGreaterThan(0);
    expect(await onScreen("table.figures").innerText()).toMatch(/\$29 a month → .*\$49 a month/);
    const timeline = page.getByRole("list", { name: "Changes" });
    const rise = timeline.locator("li[data-severity=critical]").first();
    expect(await rise.innerText()).toContain("Pricing: Price rise");
    expect(await rise.locator(".numbers").innerText()).toBe(
      "Pro: $29 a month → $49 a month (+69%)",
    );
    await rise.getByText("Before and after").click();
    const changed = rise.locator("table.before-after tr.changed");
    expect(await changed.first().innerText()).toContain("(changed)");
    expect(await changed.locator("mark").allInnerTexts()).toContain("$49 a month");
    // The pricing page as both checks saw it, side by side: fetched with the key, shown from memory.
    const shots = rise.locator("details.shots");
    await shots.locator("summary").click();
    await expect
      .poll(
        () =>
          shots
            .locator("img")
            .evaluateAll((imgs) => imgs.map((i) => (i as HTMLImageElement).naturalWidth > 0)),
        { timeout: 10_000 },
      )
      .toEqual([true, true]);
    // Their plans beside the brand profile's own.
    const compare = onScreen("[aria-labelledby=plans-title] .compare");
    expect(await compare.innerText()).toContain("Team: $39 a month");
    expect(await compare.innerText()).toContain("$49");
    // An alert rule for this competitor, from a form.
    await page.getByLabel("Alert name").fill("Big price moves");
    await page.getByLabel("Price moves of at least (%)").fill("10");
    await page.getByRole("button", { name: "Add alert" }).click();
    const rules = page.getByRole("list", { name: "Alert rules" });
    await expect.poll(() => rules.innerText()).toContain("price moves of 10% or more");
    expect(await unlabelledControls()).toEqual([]);
    // The battlecard and the changes, downloaded as files.
    const saved = async (button: string) => {
      const [file] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: button }).click(),
      ]);
      return readFile((await file.path()) ?? "", "utf8");
    };
    const markdown = await saved("Download battlecard");
    expect(markdown).toMatch(/^# Battlecard: /);
    expect(markdown).toContain("| Pro | $49");
    expect(markdown).toContain("Critical · Price rise: Pro: $29 a month → $49 a month (+69%)");
    expect((await saved("Battlecard for Word")).startsWith("PK")).toBe(true);
    const csv = (await saved("Download changes (CSV)")).split("\r\n");
    expect(csv[0]).toBe(
      "Detected,Company,Area,Change,Severity,What changed,Summary,Page,Read,Actioned",
    );
    expect(csv.some((row) => row.includes(",Pricing,Price rise,Critical,"))).toBe(true);
    // Printed, the page is the battlecard alone: no menu, no buttons, no forms.
    await page.emulateMedia({ media: "print" });
    expect(await page.locator("header").isVisible()).toBe(false);
    expect(await page.getByRole("button", { name: "Print battlecard" }).isVisible()).toBe(false);
    await page.emulateMedia({ media: "screen" });
    await shoot("competitor");
    expect(await seriousViolations()).toEqual([]);
  }, 30_000);

  it("home puts this week's changes first, each with its company, kind and numbers", async () => {
    await go("Home");
    const changes = page.getByRole("list", { name: "Changes this week" }).locator("li.event");
    await expect.poll(() => changes.count()).toBeGreaterThanOrEqual(2);
    const first = await changes.first().innerText();
    expect(first).toContain("Critical");
    expect(first).toContain("Price rise");
    expect(first).toContain("(+69%)");
    expect(await changes.first().getByRole("link").getAttribute("href")).toBe(competitorHash);
    expect(await page.getByRole("list", { name: "Sources that failed" }).innerText()).toBe(
      "Every source was read.",
    );
    expect(await page.getByRole("list", { name: "Quotas" }).locator("li").count()).toBeGreaterThan(
      2,
    );
    await shoot("home");
    expect(await seriousViolations()).toEqual([]);
  });

  it("links the brand profile's competitors to the tracked ones, by address or by name", async () => {
    await go("Settings");
    const yours = page.getByRole("list", { name: "Your competitors" });
    const link = (name: string) => yours.getByRole("link", { name, exact: true });
    await expect.poll(() => link(rival.origin).getAttribute("href")).toBe(competitorHash);
    expect(await link("acme").getAttribute("href")).toBe(competitorHash);
    const untracked = yours.locator("li").filter({ hasText: "Mixpanel" });
    expect(await untracked.getByRole("link").innerText()).toBe("Track this competitor");
    expect(await yours.getByRole("link", { name: "Track this competitor" }).count()).toBe(1);
    expect(await seriousViolations()).toEqual([]);
  });

  it("is readable at 390 pixels wide", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await go("Knowledge");
    await sourceCard("Pricing").waitFor();
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow).toBeLessThanOrEqual(0);
    await shoot("knowledge-390px");
    await page.goto(`${server.url}/${competitorHash}`);
    await onScreen("svg.chart").waitFor();
    expect(
      await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      ),
    ).toBeLessThanOrEqual(0);
    await shoot("competitor-390px");
  });

  it("threw no error in the page on any screen", () => {
    expect(pageErrors).toEqual([]);
  });
});
