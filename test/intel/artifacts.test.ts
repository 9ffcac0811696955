import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyStore } from "../../lib/auth/keys.js";
import { createServiceApp } from "../../lib/http/app.js";
import { bearerAuth } from "../../lib/http/auth.js";
import { Artifacts } from "../../lib/intel/artifacts/artifacts.js";
import { MAX_ARTIFACT_BYTES } from "../../lib/intel/artifacts/contract.js";
import { artifactsRoutes } from "../../lib/intel/artifacts/routes.js";
import { kpi } from "../../lib/intel/modules/kpi.js";
import { persona } from "../../lib/intel/modules/persona.js";
import { parseStrict, strictJsonSchema } from "../../lib/llm/strict-mode.js";
import { startAws, type TestAws } from "../support/aws.js";
import { sampleFromSchema } from "../support/fake-openai.js";
import { zipEntry } from "../support/zip-entry.js";

type Json = { [key: string]: unknown };

let aws: TestAws;
let app: ReturnType<typeof createServiceApp>;
let acme: string;
let other: string;

/** A complete, valid output of a module, as a model would answer it. */
const outputOf = (module: typeof persona | typeof kpi) =>
  parseStrict(module.output, sampleFromSchema(strictJsonSchema(module.output))).data;

const CITATION = {
  source_id: "kb_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
  source_url_or_path: "https://acme.com/customers",
  name: "Customer research",
  quote: "Their biggest pain is reporting that takes days.",
};

const personaArtifact = (title = "Persona: Growth-lead Grace") => ({
  module: "persona",
  title,
  inputs: { segment: "Heads of growth" },
  output: outputOf(persona),
  citations: [CITATION],
});

const kpiArtifact = (title = "KPI framework: revenue") => ({
  module: "kpi",
  title,
  inputs: { goal: "Grow revenue", stage: "growth" },
  output: outputOf(kpi),
  citations: [],
});

async function call(key: string, method: string, path: string, json?: unknown) {
  const res = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(json === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json };
}

const save = async (key: string, artifact: unknown) => {
  const res = await call(key, "POST", "/api/artifacts", artifact);
  expect(res.status).toBe(201);
  return res.body as Json & { id: string };
};

interface ArtifactList {
  artifacts: Array<Json & { id: string; title: string }>;
  nextCursor: string | null;
}
const list = async (key: string, query = "") =>
  (await call(key, "GET", `/api/artifacts${query}`)).body as unknown as ArtifactList;

beforeAll(async () => {
  aws = await startAws();
  const keys = new KeyStore(aws.table, 0);
  const key = async (name: string) =>
    (await keys.createKey((await keys.createWorkspace(name)).id)).key;
  [acme, other] = await Promise.all([key("Acme"), key("Other")]);
  app = createServiceApp({
    authenticate: bearerAuth(keys),
    modules: [artifactsRoutes({ artifacts: new Artifacts(aws.table) })],
  });
});
afterAll(() => aws.close());

describe("saving an artifact", () => {
  it("answers 201 with an art_ id and times, and keeps the artifact as it was sent", async () => {
    const artifact = personaArtifact();
    const saved = await save(acme, artifact);
    expect(saved).toEqual({
      ...artifact,
      id: expect.stringMatching(/^art_[0-9A-Z]{26}$/),
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      updatedAt: saved.createdAt,
    });
    expect((await call(acme, "GET", `/api/artifacts/${saved.id}`)).body).toEqual(saved);
  });

  it.each([
    ["an unknown module", { ...kpiArtifact(), module: "swot" }],
    ["another module's output", { ...kpiArtifact(), output: outputOf(persona) }],
    ["inputs the module would refuse", { ...kpiArtifact(), inputs: { goal: "" } }],
    ["an output missing a field", { ...kpiArtifact(), output: { northStar: {} } }],
    ["no title", { ...kpiArtifact(), title: " " }],
    ["fields of a saved artifact", { ...kpiArtifact(), id: "art_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }],
    ["a citation without a source", { ...kpiArtifact(), citations: [{ name: "x" }] }],
  ])("answers 400 for %s", async (_, artifact) => {
    const res = await call(acme, "POST", "/api/artifacts", artifact);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: "validation_failed" } });
  });

  it("answers 413 for an artifact larger than one item may safely hold", async () => {
    const quote = "x".repeat(MAX_ARTIFACT_BYTES);
    const res = await call(acme, "POST", "/api/artifacts", {
      ...personaArtifact(),
      citations: [{ ...CITATION, quote }],
    });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ error: { code: "payload_too_large" } });
  });
});

describe("listing artifacts", () => {
  let ws: string;
  const titles = (page: ArtifactList) => page.artifacts.map((a) => a.title);

  beforeAll(async () => {
    const keys = new KeyStore(aws.table, 0);
    ws = (await keys.createKey((await keys.createWorkspace("Lister")).id)).key;
    for (const n of [1, 2, 3]) await save(ws, personaArtifact(`persona ${n}`));
    for (const n of [1, 2]) await save(ws, kpiArtifact(`kpi ${n}`));
  });

  it("lists summaries newest first, without outputs", async () => {
    const page = await list(ws);
    expect(titles(page)).toEqual(["kpi 2", "kpi 1", "persona 3", "persona 2", "persona 1"]);
    expect(page.nextCursor).toBeNull();
    expect(page.artifacts[0]).toEqual({
      id: expect.stringMatching(/^art_/),
      module: "kpi",
      title: "kpi 2",
      inputs: { goal: "Grow revenue", stage: "growth" },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  it("filters by module", async () => {
    expect(titles(await list(ws, "?module=persona"))).toEqual([
      "persona 3",
      "persona 2",
      "persona 1",
    ]);
  });

  it("pages with limit and cursor, filtered or not", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: ArtifactList = await list(
        ws,
        `?module=persona&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(page.artifacts.length).toBeLessThanOrEqual(2);
      seen.push(...titles(page));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(["persona 3", "persona 2", "persona 1"]);
  });

  it.each([
    ["a limit over 100", "?limit=101", "validation_failed"],
    ["an unknown module", "?module=swot", "validation_failed"],
    ["a foreign cursor", "?cursor=bm9wZQ", "invalid_cursor"],
  ])("answers 400 for %s", async (_, query, code) => {
    const res = await call(ws, "GET", `/api/artifacts${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code } });
  });
});

describe("renaming and deleting", () => {
  it("renames, changing only the title and updatedAt", async () => {
    const saved = await save(acme, kpiArtifact());
    const res = await call(acme, "PATCH", `/api/artifacts/${saved.id}`, { title: "  Q3 KPIs " });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...saved, title: "Q3 KPIs", updatedAt: expect.any(String) });
    expect((await call(acme, "GET", `/api/artifacts/${saved.id}`)).body.title).toBe("Q3 KPIs");
  });

  it.each([
    ["an empty title", { title: "" }],
    ["another field", { title: "New", output: {} }],
  ])("refuses %s", async (_, body) => {
    const saved = await save(acme, kpiArtifact());
    const res = await call(acme, "PATCH", `/api/artifacts/${saved.id}`, body);
    expect(res.status).toBe(400);
  });

  it("deletes with 204, after which the artifact is 404", async () => {
    const saved = await save(acme, kpiArtifact());
    expect((await call(acme, "DELETE", `/api/artifacts/${saved.id}`)).status).toBe(204);
    expect((await call(acme, "GET", `/api/artifacts/${saved.id}`)).status).toBe(404);
    expect((await call(acme, "DELETE", `/api/artifacts/${saved.id}`)).status).toBe(404);
    expect((await call(acme, "PATCH", `/api/artifacts/${saved.id}`, { title: "x" })).status).toBe(
      404,
    );
  });
});

describe("tenancy", () => {
  it("answers 404 for another workspace's artifact, as for unknown and malformed ids", async () => {
    const saved = await save(acme, personaArtifact("Acme only"));
    for (const id of [saved.id, "art_01JD3Q8Y5V2N6W3KX9T7M4PZ8R", "nope"]) {
      for (const [method, body] of [["GET"], ["PATCH", { title: "Stolen" }], ["DELETE"]] as const) {
        const res = await call(other, method, `/api/artifacts/${id}`, body);
        expect(res.status, `${method} ${id}`).toBe(404);
        expect(res.body).toMatchObject({ error: { code: "not_found" } });
      }
    }
    expect((await list(other)).artifacts).toEqual([]);
    expect((await call(acme, "GET", `/api/artifacts/${saved.id}`)).body.title).toBe("Acme only");
  });
});

describe("exporting an artifact", () => {
  const exportOf = (key: string, id: string, format: string) =>
    app.request(`/api/artifacts/${id}/export?format=${format}`, {
      headers: { authorization: `Bearer ${key}` },
    });

  it("writes Markdown: the title, then the output with keys as headings and labels", async () => {
    const artifact = personaArtifact("Persona: Export Edna");
    const saved = await save(acme, artifact);
    const res = await exportOf(acme, saved.id, "md");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    expect(res.headers.get("content-disposition")).toBe(
      'attachment; filename="persona-export-edna.md"',
    );
    const markdown = await res.text();
    expect(markdown.startsWith("# Persona: Export Edna\n\n")).toBe(true);
    const name = (artifact.output as { name: string }).name;
    expect(markdown).toContain(`**Name:** ${name}\n`);
  });

  it("writes a DOCX, a zip whose word/document.xml holds the title and the text", async () => {
    const artifact = personaArtifact("Persona: Docx Dora");
    const saved = await save(acme, artifact);
    const res = await exportOf(acme, saved.id, "docx");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(
      "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    );
    expect(res.headers.get("content-disposition")).toBe(
      'attachment; filename="persona-docx-dora.docx"',
    );
    const xml = await zipEntry(Buffer.from(await res.arrayBuffer()), "word/document.xml");
    expect(xml).toContain("Persona: Docx Dora");
    // The label is a bold run of its own and the value the run after it.
    expect(xml).toContain(">Name:<");
    expect(xml).toContain((artifact.output as { name: string }).name.replace(/&/g, "&amp;"));
  });

  it("answers 404 for another workspace's artifact and 400 for an unknown format", async () => {
    const saved = await save(acme, kpiArtifact("Acme export"));
    const hidden = await exportOf(other, saved.id, "docx");
    expect(hidden.status).toBe(404);
    expect(((await hidden.json()) as Json).error).toMatchObject({ code: "not_found" });
    for (const format of ["pdf", ""]) {
      const res = await exportOf(acme, saved.id, format);
      expect(res.status, format).toBe(400);
      expect(((await res.json()) as Json).error).toMatchObject({ code: "validation_failed" });
    }
  });
});
