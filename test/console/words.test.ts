import { describe, expect, it } from "vitest";
import type { IntelEvent } from "../../lib/console/app/api-types.js";
import { changeInNumbers } from "../../lib/console/app/competitors/change.js";
import { eventsCsv } from "../../lib/console/app/exports.js";
import { byUrgency } from "../../lib/console/app/home/screen.js";
import { count, explain, kindWord, plain, sourceState } from "../../lib/console/app/words.js";
import { toMarkdown } from "../../lib/intel/artifacts/markdown.js";

/** The console's words, numbers and files, without a browser (the e2e shows them on screen). */

function event(over: Partial<IntelEvent> & Pick<IntelEvent, "id">): IntelEvent {
  return {
    competitorId: "comp_1",
    competitorDomain: "rival.com",
    type: "pricing",
    severity: "low",
    title: "t",
    aiBrief: "brief",
    details: { change: "price_increase", subject: "Pro", before: null, after: null, url: null },
    change: {
      kind: "price_increase",
      subject: "Pro",
      url: null,
      before: { plan: "Pro", amount: 29, currency: "USD", period: "month" },
      after: { plan: "Pro", amount: 49, currency: "USD", period: "month" },
      percentChange: 68.97,
      confidence: 1,
      count: 1,
    },
    alert: true,
    alertRules: [],
    isRead: false,
    isActioned: false,
    detectedAt: "2026-11-20T10:00:00.000Z",
    screenshots: { before: null, after: null },
    ...over,
  };
}

describe("the console's words", () => {
  it("name states and kinds as a marketer would, and count nouns right", () => {
    expect(sourceState("awaiting_upload")).toBe("Waiting for the file");
    expect(kindWord("price_increase")).toBe("Price rise");
    expect(kindWord("some_new_kind")).toBe("Some new kind");
    expect([count(1, "passage"), count(3, "passage")]).toEqual(["1 passage", "3 passages"]);
    expect(plain("Only `true` or `1`")).toBe("Only true or 1");
  });

  it("explain an error with the screen that fixes it, or fall back on the API's message", () => {
    expect(explain("brand_profile_missing", "save one with PUT /api/brand").fix).toEqual({
      label: "Set up your brand profile",
      href: "#/settings",
    });
    expect(explain("brand_profile_missing", "x").what).not.toMatch(/api|PUT/);
    expect(explain("something_new", "The thing broke")).toEqual({ what: "The thing broke" });
  });

  it("say a change in numbers", () => {
    expect(changeInNumbers(event({ id: "e" }).change)).toBe(
      "Pro: $29 a month → $49 a month (+69%)",
    );
    const roles = event({ id: "r" }).change;
    expect(
      changeInNumbers({
        ...roles,
        kind: "roles_added",
        subject: "Engineering",
        before: { roles: ["A"] },
        after: { roles: ["A", "B", "C"] },
        percentChange: null,
      }),
    ).toBe("Engineering: +2 open roles");
  });
});

describe("home's order", () => {
  it("puts unread critical and high first, then by severity, newest first", () => {
    const events = [
      event({ id: "read-critical", severity: "critical", isRead: true }),
      event({ id: "low-new", severity: "low", detectedAt: "2026-11-26T00:00:00.000Z" }),
      event({ id: "high-old", severity: "high", detectedAt: "2026-11-21T00:00:00.000Z" }),
      event({ id: "high-new", severity: "high", detectedAt: "2026-11-25T00:00:00.000Z" }),
      event({ id: "medium", severity: "medium" }),
    ];
    expect(byUrgency(events).map((e) => e.id)).toEqual([
      "high-new",
      "high-old",
      "read-critical",
      "medium",
      "low-new",
    ]);
  });
});

describe("exports", () => {
  it("write the events as CSV a spreadsheet opens safely", () => {
    const csv = eventsCsv([event({ id: "e", aiBrief: '=HYPERLINK("x"), then "more"' })]);
    const [head, row] = csv.split("\r\n");
    expect(head).toBe(
      "Detected,Company,Area,Change,Severity,What changed,Summary,Page,Read,Actioned",
    );
    expect(row).toBe(
      `2026-11-20T10:00:00.000Z,rival.com,Pricing,Price rise,Low,Pro: $29 a month → $49 a month (+69%),"'=HYPERLINK(""x""), then ""more""",,No,No`,
    );
  });

  it("write structured output as Markdown", () => {
    expect(toMarkdown({ summary: "Hi", pains: ["Slow", "Costly"], ok: true })).toBe(
      "**Summary:** Hi\n\n## Pains\n\n- Slow\n- Costly\n\n**Ok:** Yes\n",
    );
  });
});
