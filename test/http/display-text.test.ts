import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { app as docsApp } from "../../functions/docs-api.js";
import { loadHtml } from "../../lib/competitors/extract/html.js";
import { extractCompanyName } from "../../lib/competitors/extract/identity.js";
import { displayTextProblem, toDisplayText } from "../../lib/display-text.js";
import { persona } from "../../lib/intel/modules/persona.js";
import { parseStrict, strictJsonSchema } from "../../lib/llm/strict-mode.js";
import { sampleFromSchema } from "../support/fake-openai.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

/**
 * Names and titles the API shows back as labels are display strings (lib/display-text.ts): one
 * line of visible text, without bidi controls or control characters. What a caller sends is
 * refused with a 400 naming the field and stores nothing; what the service derives is stripped.
 */

type Json = Record<string, unknown>;
interface Issue {
  path: string;
  message: string;
}

let rt: TestRuntime;
let site: Site;
let sourceId: string;
let artifactId: string;

/** One of each class a display string refuses, the spoofing example of the issue first. */
const REFUSED: Record<string, string[]> = {
  "bidi controls": [
    "report\u202Efdp.exe",
    ...["\u202A", "\u202B", "\u202C", "\u202D", "\u2066", "\u2067", "\u2068", "\u2069"].map(
      (c) => `a${c}b`,
    ),
    ...["\u200E", "\u200F", "\u061C"].map((c) => `a${c}b`),
  ],
  "NUL and other control characters": [
    "a\u0000b",
    "a\u0007b",
    "a\u001Bb",
    "a\u007Fb",
    "a\u0085b",
    "a\u009Bb",
    "a\tb",
    "a\nb",
    "a\r\nb",
    "a\u2028b",
  ],
  "text empty once invisible characters are removed": [
    "",
    "   ",
    "\u200B",
    "\u200C\u200D",
    "\u2060",
    "\uFEFF",
    "\u00AD",
    "\uFE0F",
    "\u200B \u00A0\u3000\u200D",
  ],
};

/** Ordinary names in many scripts, kept exactly as sent (joiners and selectors beside text too). */
const ACCEPTED = [
  "Café crème — résumé 2025",
  "Ünïcödé naïve façade",
  "🚀 Launch plan 👩‍👩‍👧‍👦 ❤️",
  "日本語の資料",
  "한국어 문서",
  "تقرير المبيعات الفصلي",
  "דוח מכירות רבעוני",
  "Pricing: עברית and العربية mixed",
  "می‌خواهم",
  "हिन्दी दस्तावेज़",
];

const personaArtifact = (title: string) => ({
  module: "persona",
  title,
  inputs: { segment: "Heads of growth" },
  output: parseStrict(persona.output, sampleFromSchema(strictJsonSchema(persona.output))).data,
  citations: [],
});

const form = (name: string | undefined, filename = "notes.md") => {
  const body = new FormData();
  body.append("file", new File(["# Notes\n\nSome text."], filename, { type: "text/markdown" }));
  if (name !== undefined) body.append("name", name);
  return body;
};

const post = (path: string, json: unknown) => rt.call(path, { method: "POST", json });
const patch = (path: string, json: unknown) => rt.call(path, { method: "PATCH", json });
const read = async (path: string) => {
  const res = await rt.call(path);
  return { status: res.status, body: (await res.json()) as Json };
};
/** The ids and names of a list, or of one item: what a refused request must leave as it was. */
const names = async (path: string, key: string, name = "name") => {
  const { status, body } = await read(path);
  const items = (key ? body[key] : [body]) as Json[];
  return { status, items: items.map((item) => [item.id, item[name]]) };
};

beforeAll(async () => {
  // The webhook endpoints and the crawled site are on loopback.
  process.env.ALLOW_PRIVATE_URLS = "true";
  // Hundreds of requests in a few seconds, one workspace.
  process.env.RATE_LIMIT_PER_MINUTE = "100000";
  [rt, site] = await Promise.all([startTestRuntime(), startSite()]);
  sourceId = ((await (await post("/api/knowledge", { text: "Kept" })).json()) as Json).id as string;
  artifactId = ((await (await post("/api/artifacts", personaArtifact("Kept"))).json()) as Json)
    .id as string;
});
afterAll(async () => {
  // The sources made here index in the background: let them finish before the index goes.
  for (let i = 0; rt && i < 600; i++) {
    const { body } = await read("/api/knowledge?status=indexing&limit=1");
    if ((body.sources as Json[]).length === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await Promise.all([rt?.close(), site?.close()]);
}, 60_000);

/** A route taking a display string, and what it stores that a refused request must not change. */
interface Case {
  route: string;
  field: string;
  send(value: string): Promise<Response>;
  state(): Promise<unknown>;
}

const CASES: Case[] = [
  {
    route: "POST /api/knowledge (JSON)",
    field: "name",
    send: (name) => post("/api/knowledge", { text: "Body", name }),
    state: () => names("/api/knowledge?limit=100", "sources"),
  },
  {
    route: "POST /api/knowledge (multipart)",
    field: "name",
    send: (name) => rt.call("/api/knowledge", { method: "POST", body: form(name) }),
    state: () => names("/api/knowledge?limit=100", "sources"),
  },
  {
    route: "PATCH /api/knowledge/{id}",
    field: "name",
    send: (name) => patch(`/api/knowledge/${sourceId}`, { name }),
    state: () => names(`/api/knowledge/${sourceId}`, ""),
  },
  {
    route: "POST /api/knowledge/uploads",
    field: "name",
    send: (name) =>
      post("/api/knowledge/uploads", {
        filename: "deck.pdf",
        contentType: "application/pdf",
        bytes: 1000,
        name,
      }),
    state: () => names("/api/knowledge?limit=100", "sources"),
  },
  {
    route: "POST /api/artifacts",
    field: "title",
    send: (title) => post("/api/artifacts", personaArtifact(title)),
    state: () => read("/api/artifacts?limit=100"),
  },
  {
    route: "PATCH /api/artifacts/{id}",
    field: "title",
    send: (title) => patch(`/api/artifacts/${artifactId}`, { title }),
    state: () => read(`/api/artifacts/${artifactId}`),
  },
  {
    route: "POST /api/webhooks",
    field: "description",
    send: (description) =>
      post("/api/webhooks", {
        url: "http://127.0.0.1:9/hook",
        events: ["refresh.completed"],
        description,
      }),
    state: () => read("/api/webhooks"),
  },
  {
    route: "PUT /api/brand",
    field: "name",
    send: (name) =>
      rt.call("/api/brand", { method: "PUT", json: { name, description: "What we do" } }),
    state: () => read("/api/brand"),
  },
  {
    route: "PUT /api/brand (a product)",
    field: "products.1",
    send: (product) =>
      rt.call("/api/brand", {
        method: "PUT",
        json: { name: "Acme", description: "What we do", products: ["Pro", product] },
      }),
    state: () => read("/api/brand"),
  },
];

describe.each(CASES)("$route", ({ field, send, state }) => {
  it.each(Object.entries(REFUSED))(
    `refuses ${field} with %s: a 400 naming the field, nothing stored`,
    async (_, values) => {
      const before = await state();
      for (const value of values) {
        const res = await send(value);
        const label = JSON.stringify(value);
        expect(res.status, label).toBe(400);
        const { error } = (await res.json()) as {
          error: { code: string; message: string; details: { issues: Issue[] } };
        };
        expect(error.code, label).toBe("validation_failed");
        expect(
          error.details.issues.map((issue) => issue.path),
          label,
        ).toContain(field);
      }
      expect(await state()).toEqual(before);
    },
  );
});

describe("ordinary names in any script", () => {
  it.each(ACCEPTED)("are kept unchanged: %s", async (name) => {
    const created = (await (await post("/api/knowledge", { text: "Body", name })).json()) as Json;
    expect((await read(`/api/knowledge/${created.id}`)).body.name).toBe(name);

    const uploaded = await rt.call("/api/knowledge", { method: "POST", body: form(name) });
    expect(((await uploaded.json()) as Json).name).toBe(name);

    const renamed = await patch(`/api/knowledge/${sourceId}`, { name });
    expect(renamed.status).toBe(200);
    expect(((await renamed.json()) as Json).name).toBe(name);

    const artifact = await patch(`/api/artifacts/${artifactId}`, { title: name });
    expect(((await artifact.json()) as Json).title).toBe(name);

    const hook = await post("/api/webhooks", {
      url: "http://127.0.0.1:9/hook",
      events: ["refresh.completed"],
      description: name,
    });
    expect(hook.status).toBe(201);
    const { id } = (await hook.json()) as { id: string };
    expect((await read(`/api/webhooks/${id}`)).body.description).toBe(name);
    await rt.call(`/api/webhooks/${id}`, { method: "DELETE" });

    const brand = await rt.call("/api/brand", {
      method: "PUT",
      json: { name, description: "What we do", products: [name] },
    });
    expect(brand.status).toBe(200);
    expect((await read("/api/brand")).body).toMatchObject({ name, products: [name] });
  });
});

describe("names the service derives", () => {
  const sourceOf = async (id: string) => (await read(`/api/knowledge/${id}`)).body;

  it("strip controls and bidi controls from a text's first line, or fall back", async () => {
    const named = (await (
      await post("/api/knowledge", { text: "# Q3\u202E plan\u0000\treview\u2066\nThe body." })
    ).json()) as Json;
    expect((await sourceOf(named.id as string)).name).toBe("Q3 plan review");
    const invisible = (await (
      await post("/api/knowledge", { text: "\u200B\u202E\u200D\nThe body." })
    ).json()) as Json;
    expect((await sourceOf(invisible.id as string)).name).toBe("Untitled text");
  });

  it("strip them from an uploaded file's name", async () => {
    const res = await rt.call("/api/knowledge", {
      method: "POST",
      body: form(undefined, "q3\u202Eplan\u0007\u200F.md"),
    });
    const created = (await res.json()) as Json;
    expect(created.name).toBe("q3plan.md");
    expect(await sourceOf(created.id as string)).toMatchObject({
      name: "q3plan.md",
      source_url_or_path: "q3plan.md",
    });
    // What would show as `reportexe.pdf` shows as what it is.
    const spoof = await rt.call("/api/knowledge", {
      method: "POST",
      body: form(undefined, "report\u202Efdp.exe"),
    });
    expect(((await spoof.json()) as Json).name).toBe("reportfdp.exe");
    const presigned = await post("/api/knowledge/uploads", {
      filename: "deck\u202E\u0000 2025.pdf",
      contentType: "application/pdf",
      bytes: 1000,
    });
    expect(presigned.status).toBe(200);
    const { id } = (await presigned.json()) as { id: string };
    expect(await sourceOf(id)).toMatchObject({
      name: "deck 2025.pdf",
      source_url_or_path: "deck 2025.pdf",
    });
    const blank = await post("/api/knowledge/uploads", {
      filename: "\u200B\u202E",
      contentType: "application/pdf",
      bytes: 1000,
    });
    expect(blank.status).toBe(400);
  });

  it("strip them from a crawled page's title", async () => {
    site.route(
      "/",
      // (A NUL an HTML parser makes U+FFFD itself.)
      respond(htmlPage("Docs\u202E\u0007 home\u200F", `<h1>Docs</h1>${prose("Docs")}`)),
    );
    const started = await post("/api/knowledge/crawl", { seedUrl: `${site.origin}/`, maxPages: 1 });
    expect(started.status).toBe(200);
    const { crawlId } = (await started.json()) as { crawlId: string };
    let page: Json | undefined;
    for (let i = 0; i < 200 && !page?.sourceId; i++) {
      const { body } = await read(`/api/knowledge/crawl/${crawlId}/pages`);
      page = (body.pages as Json[])[0];
      if (!page?.sourceId) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(page?.status).toBe("indexed");
    expect((await sourceOf(page?.sourceId as string)).name).toBe("Docs home");
  }, 30_000);

  it("strip them from a competitor's name as its site states it", () => {
    const page = loadHtml(
      "https://acme.com/",
      htmlPage(
        "Home",
        "<p>Hi</p>",
        '<meta property="og:site_name" content="Acme\u202E Inc\u0000">',
      ),
    );
    expect(extractCompanyName(page)).toBe("Acme Inc");
  });

  it("keep the rule of one helper: what is stripped passes the check", () => {
    for (const value of Object.values(REFUSED).flat()) {
      const safe = toDisplayText(value);
      expect(safe === "" || displayTextProblem(safe) === undefined, JSON.stringify(value)).toBe(
        true,
      );
    }
    for (const name of ACCEPTED) expect(toDisplayText(name)).toBe(name);
  });
});

describe("workspace names and key labels", () => {
  it("are display strings too", async () => {
    const { keys } = rt.runtime;
    await expect(keys.createWorkspace("Acme\u202Eevil")).rejects.toMatchObject({
      code: "validation_failed",
      details: { issues: [{ path: "name", message: expect.any(String) }] },
    });
    await expect(keys.createKey(rt.runtime.workspaceId, "ci\u0000")).rejects.toMatchObject({
      code: "validation_failed",
      details: { issues: [{ path: "label", message: expect.any(String) }] },
    });
    const ws = await keys.createWorkspace("Ünïcödé 日本 עברית 🚀");
    expect(ws.name).toBe("Ünïcödé 日本 עברית 🚀");
  });
});

describe("the API reference at /docs", () => {
  it("is served with the console's security headers", async () => {
    for (const res of [await docsApp.request("/docs"), await rt.call("/docs", { key: null })]) {
      expect(res.status).toBe(200);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self';");
      expect(csp).toContain("connect-src 'self';");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("base-uri 'none'");
      expect(csp).not.toContain("unsafe-eval");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    }
    const viewer = await docsApp.request("/docs/api-reference.js");
    expect(viewer.headers.get("x-content-type-options")).toBe("nosniff");
  });
});
