import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { competitorsRoutes } from "../../lib/competitors/routes.js";
import { DomainError } from "../../lib/errors.js";
import { type AppEnv, createServiceApp } from "../../lib/http/app.js";
import { type ArtifactDraft, Artifacts } from "../../lib/intel/artifacts/artifacts.js";
import { battlecard, type CompetitorAnalysis } from "../../lib/intel/battlecard/battlecard.js";
import { Battlecards } from "../../lib/intel/battlecard/battlecards.js";
import { BATTLECARD_LIMITS } from "../../lib/intel/battlecard/contract.js";
import { battlecardRoutes } from "../../lib/intel/battlecard/routes.js";
import { BrandProfiles } from "../../lib/intel/brand/profiles.js";
import { textLoader } from "../../lib/knowledge/indexing/indexer.js";
import type { Retriever } from "../../lib/knowledge/retrieval/retrieval.js";
import { Sources } from "../../lib/knowledge/sources/sources.js";
import type { IndexMessage } from "../../lib/store/queue.js";
import { startWorld, type World } from "../competitors/world.js";
import { indexerOn, retrieverOn, roomyQuotas } from "../support/aws.js";
import { zipEntry } from "../support/zip-entry.js";

/** Stands in for API-key auth: the workspace comes from a header. */
const testAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  const workspaceId = c.req.header("x-test-workspace");
  if (!workspaceId) throw new DomainError("unauthorized", "No workspace");
  c.set("workspaceId", workspaceId);
  await next();
};

/** A competitor analysis as the competitor module answers one, saying `says` where it matters. */
const analysis = (says: string): CompetitorAnalysis => ({
  competitor: "Acme",
  positioning: `${says}: the website platform for marketing teams`,
  targetSegments: ["Marketing teams"],
  products: [{ name: "Pro", summary: "Ten sites and analytics" }],
  pricing: "Per site",
  strengths: [`${says}: fast page builder`],
  weaknesses: ["Seats cost extra"],
  recentChanges: [],
  howToWin: ["Lead with unlimited seats"],
  battlecard: {
    talkingPoints: [{ point: `${says}: we include every seat`, proof: "Our plans page" }],
    landmines: ["Ask what ten editors would cost them"],
    objections: [{ objection: "Acme is cheaper", response: "Not once seats are counted" }],
  },
});

const competitorArtifact = (title: string, inputs: object, says: string) =>
  ({ module: "competitor", title, inputs, output: analysis(says), citations: [] }) as ArtifactDraft;

describe("a competitor's battlecard", () => {
  let world: World;
  let app: ReturnType<typeof createServiceApp>;
  let deps: ConstructorParameters<typeof Battlecards>[0];
  let id = "";
  const request = (path: string, workspace = "ws_a", method = "GET", body?: unknown) =>
    app.request(path, {
      method,
      headers: { "x-test-workspace": workspace, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const card = (format: string, workspace?: string) =>
    request(`/api/intel/competitors/${id}/battlecard?format=${format}`, workspace);

  beforeAll(async () => {
    world = await startWorld();
    const { table, blobs } = world.aws;
    const brands = new BrandProfiles(table);
    const artifacts = new Artifacts(table);
    deps = { ...world.services, brands, artifacts, retriever: retrieverOn(world.aws) };
    app = createServiceApp({
      authenticate: testAuth,
      modules: [
        competitorsRoutes({
          ...world.services,
          checksQueue: world.aws.queue("checks"),
          quotas: roomyQuotas(table),
          allowPrivate: true,
        }),
        battlecardRoutes({ battlecards: new Battlecards(deps) }),
      ],
    });
    const created = await request("/api/intel/competitors", "ws_a", "POST", { domain: world.host });
    id = ((await created.json()) as { id: string }).id;
    expect((await request(`/api/intel/competitors/${id}/check`, "ws_a", "POST")).status).toBe(200);
    // A price rise, so the card has a change to list.
    const pro = world.site.state.plans.find((p) => p.name === "Pro");
    if (pro) pro.price = "$49";
    expect((await request(`/api/intel/competitors/${id}/check`, "ws_a", "POST")).status).toBe(200);
    await brands.put("ws_a", {
      name: "Brightpage",
      description: "Landing pages for marketing teams.",
      differentiators: ["Unlimited seats on every plan"],
      products: ["Team: $39 a month"],
    });

    // Analyses, oldest first: this competitor's (by its domain, then by its company name), then
    // another competitor's, the newest of all.
    await artifacts.create(
      "ws_a",
      competitorArtifact("Competitor: Acme (spring)", { domain: world.host }, "Superseded"),
    );
    await artifacts.create(
      "ws_a",
      competitorArtifact("Competitor: Acme", { company: "acme" }, "Latest"),
    );
    await artifacts.create(
      "ws_a",
      competitorArtifact("Competitor: Rival", { domain: "rival.example" }, "Elsewhere"),
    );

    // The knowledge base: notes that name them, notes that name them but are disabled, and a
    // page that never names them though the search finds it (by their address's "127").
    const sources = new Sources({ table, blobs, indexQueue: world.aws.queue("index") });
    const indexer = indexerOn(world.aws, { text: textLoader(blobs) });
    const add = async (text: string, name: string) => {
      const item = await sources.createText("ws_a", text, name);
      const message = JSON.parse(world.aws.queues.pending("index").at(-1) as string);
      const outcome = await indexer.handle(message as IndexMessage, {
        receiveCount: 1,
        maxReceiveCount: 3,
      });
      expect(outcome).toBe("indexed");
      return item;
    };
    await add(
      "# Against Acme\nAcme charges for every editor seat; we win on total cost.",
      "Win notes",
    );
    const old = await add("# Acme in 2023\nAcme once offered a free forever plan.", "Old notes");
    await sources.setEnabled("ws_a", old.id, false);
    await add("# Onboarding\nOur onboarding takes 127 seconds for any team.", "Onboarding");
  });
  afterAll(() => world.close());

  it("writes Markdown: their claims and plans, ours beside them, and what changed", async () => {
    const res = await card("md");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(
      /^attachment; filename="battlecard-[a-z0-9-]+\.md"$/,
    );
    const markdown = await res.text();
    expect(markdown).toMatch(/^# Battlecard: Acme\n/);
    expect(markdown).toContain("- Launch in minutes, not weeks");
    expect(markdown).toContain("| Pro | $49");
    expect(markdown).toContain("## Brightpage: how we compare\n\n- Unlimited seats on every plan");
    expect(markdown).toContain("Our plans: Team: $39 a month");
    expect(markdown).toContain("Price rise: Pro: $29 a month → $49 a month (+69%)");
  });

  it("quotes the newest saved analysis of this competitor, none of another's", async () => {
    const markdown = await (await card("md")).text();
    expect(markdown).toContain("## What our analysis says\n\nFrom “Competitor: Acme”, saved ");
    expect(markdown).toContain("**Positioning:** Latest: the website platform for marketing teams");
    expect(markdown).toContain("### Talking points");
    expect(markdown).toContain("**Point:** Latest: we include every seat");
    expect(markdown).toContain("- Ask what ten editors would cost them");
    expect(markdown).not.toContain("Superseded");
    expect(markdown).not.toContain("Elsewhere");
  });

  it("quotes the enabled sources that name them, each with its source, and no disabled one", async () => {
    const markdown = await (await card("md")).text();
    const knowledge = markdown.slice(markdown.indexOf("## What our knowledge base says"));
    expect(knowledge).toContain(
      "> Acme charges for every editor seat; we win on total cost.\n\nSource: Win notes",
    );
    expect(knowledge).not.toContain("free forever");
    expect(knowledge).not.toContain("Onboarding");
  });

  it("writes a DOCX, a zip whose word/document.xml holds the card's title, plans and text", async () => {
    const res = await card("docx");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(
      "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    );
    const xml = await zipEntry(Buffer.from(await res.arrayBuffer()), "word/document.xml");
    expect(xml).toMatch(/>Battlecard: [^<]+</);
    // The plans are a table of their own, not `|` text.
    expect(xml).toContain("<w:tbl>");
    expect(xml).toContain(">Pro<");
    expect(xml).not.toContain("| Pro |");
    expect(xml).toContain(">Unlimited seats on every plan<");
    expect(xml).toContain("Latest: we include every seat");
    expect(xml).toContain("we win on total cost.");
  });

  it("is written without the knowledge base when it does not answer in time", async () => {
    // A search that never answers: only the deadline can end the wait.
    const silent: Retriever = {
      search: () => new Promise(() => undefined),
      retrieve: () => new Promise(() => undefined),
      offers: () => ({ hybrid: false, reranked: false }),
    };
    const late = new Battlecards(
      { ...deps, retriever: silent },
      { ...BATTLECARD_LIMITS, searchMs: 20 },
    );
    const { markdown } = await late.write("ws_a", id);
    expect(markdown).toContain("## What our knowledge base says\n\nThe knowledge base did not");
    expect(markdown).toContain("**Point:** Latest: we include every seat");
  });

  it("answers 404 for another workspace's competitor and 400 for an unknown format", async () => {
    const hidden = await card("md", "ws_b");
    expect(hidden.status).toBe(404);
    expect(((await hidden.json()) as { error: unknown }).error).toMatchObject({
      code: "not_found",
    });
    for (const format of ["pdf", ""]) {
      const res = await card(format);
      expect(res.status, format).toBe(400);
      expect(((await res.json()) as { error: unknown }).error).toMatchObject({
        code: "validation_failed",
      });
    }
  });
});

describe("a battlecard's Markdown", () => {
  it("cites a web page's passage by its name and address, on one line however it was written", () => {
    const markdown = battlecard({
      competitor: {
        id: "comp_1",
        domain: "rival.example",
        name: "rival.example",
        companyName: null,
        homepage: null,
        createdAt: "2026-11-01T00:00:00.000Z",
        lastAnalyzedAt: null,
        cadence: "daily",
        render: "auto",
        pages: {},
        snapshot: null,
      },
      events: [],
      brand: undefined,
      analysis: undefined,
      passages: [
        {
          text: "Rival\n\nprices per   seat.",
          source: "Pricing compared",
          url: "https://docs.example/compare",
        },
      ],
      searched: true,
    });
    expect(markdown).toContain(
      "## What our knowledge base says\n\n> Rival prices per seat.\n\nSource: Pricing compared (https://docs.example/compare)\n\n## What changed lately",
    );
    expect(markdown).not.toContain("## What our analysis says");
  });
});
