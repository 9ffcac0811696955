import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { battlecardRoutes } from "../../lib/competitors/battlecard-routes.js";
import { competitorsRoutes } from "../../lib/competitors/routes.js";
import { DomainError } from "../../lib/errors.js";
import { type AppEnv, createServiceApp } from "../../lib/http/app.js";
import { BrandProfiles } from "../../lib/intel/brand/profiles.js";
import { roomyQuotas } from "../support/aws.js";
import { zipEntry } from "../support/zip-entry.js";
import { startWorld, type World } from "./world.js";

/** Stands in for API-key auth: the workspace comes from a header. */
const testAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  const workspaceId = c.req.header("x-test-workspace");
  if (!workspaceId) throw new DomainError("unauthorized", "No workspace");
  c.set("workspaceId", workspaceId);
  await next();
};

describe("a competitor's battlecard", () => {
  let world: World;
  let app: ReturnType<typeof createServiceApp>;
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
    const brands = new BrandProfiles(world.aws.table);
    const deps = { ...world.services, brands };
    app = createServiceApp({
      authenticate: testAuth,
      modules: [
        competitorsRoutes({
          ...deps,
          checksQueue: world.aws.queue("checks"),
          quotas: roomyQuotas(world.aws.table),
          allowPrivate: true,
        }),
        battlecardRoutes(deps),
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
    expect(markdown).toMatch(/^# Battlecard: /);
    expect(markdown).toContain("- Launch in minutes, not weeks");
    expect(markdown).toContain("| Pro | $49");
    expect(markdown).toContain("## Brightpage: how we compare\n\n- Unlimited seats on every plan");
    expect(markdown).toContain("Our plans: Team: $39 a month");
    expect(markdown).toContain("Price rise: Pro: $29 a month → $49 a month (+69%)");
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
