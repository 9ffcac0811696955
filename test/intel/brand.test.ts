import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Intel, startIntel, type Workspace } from "./setup.js";

let intel: Intel;
let acme: Workspace;
let other: Workspace;

beforeAll(async () => {
  intel = await startIntel({ apiKey: undefined });
  [acme, other] = await Promise.all([intel.workspace("Acme"), intel.workspace("Other")]);
});
afterAll(() => intel.close());

const profile = {
  name: "Acme Analytics",
  domain: "Acme.COM",
  description: "Product analytics for B2B SaaS teams.",
  audience: "Growth and product leaders at SaaS companies with 50-500 staff",
  tone: "Plain-spoken and confident",
  valueProps: ["Answers in minutes, not sprints"],
  products: ["Starter", "Team", "Enterprise"],
  differentiators: ["Warehouse-native"],
  competitors: ["Mixpanel", "amplitude.com"],
};

describe("brand profile", () => {
  it("is 404 until saved, then reads back as saved, with the domain normalised", async () => {
    const missing = await intel.call(acme, "GET", "/api/brand");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "not_found" } });

    const saved = await intel.call(acme, "PUT", "/api/brand", profile);
    expect(saved.status).toBe(200);
    const body = (await saved.json()) as Record<string, unknown>;
    expect(body).toEqual({ ...profile, domain: "acme.com", updatedAt: expect.any(String) });
    expect(await (await intel.call(acme, "GET", "/api/brand")).json()).toEqual(body);
  });

  it("is replaced as a whole by PUT", async () => {
    await intel.call(acme, "PUT", "/api/brand", profile);
    const { name, description } = profile;
    await intel.call(acme, "PUT", "/api/brand", { name, description });
    expect(await (await intel.call(acme, "GET", "/api/brand")).json()).toEqual({
      name,
      description,
      updatedAt: expect.any(String),
    });
  });

  it("belongs to its workspace only", async () => {
    await intel.call(acme, "PUT", "/api/brand", profile);
    expect((await intel.call(other, "GET", "/api/brand")).status).toBe(404);
    expect(await intel.brands.get(other.id)).toBeUndefined();
  });

  it("works without any model configured", async () => {
    // This suite's service has no API key: the profile does not need a model.
    expect((await intel.call(acme, "PUT", "/api/brand", profile)).status).toBe(200);
  });

  it.each([
    ["a missing name", { ...profile, name: undefined }, "name"],
    ["an empty description", { ...profile, description: "  " }, "description"],
    ["an over-long description", { ...profile, description: "x".repeat(4001) }, "description"],
    ["a URL for a domain", { ...profile, domain: "https://acme.com/about" }, "domain"],
    ["too many competitors", { ...profile, competitors: Array(26).fill("Rival") }, "competitors"],
    ["an over-long list item", { ...profile, products: ["x".repeat(301)] }, "products.0"],
    ["an unknown field", { ...profile, logo: "x" }, "logo"],
    ["a wrong type", { ...profile, valueProps: "fast" }, "valueProps"],
  ])("refuses %s with 400 naming the field", async (_, body, path) => {
    const res = await intel.call(acme, "PUT", "/api/brand", body);
    expect(res.status).toBe(400);
    const error = (
      (await res.json()) as { error: { code: string; details: { issues: { path: string }[] } } }
    ).error;
    expect(error.code).toBe("validation_failed");
    expect(error.details.issues.map((i) => i.path)).toContain(path);
  });

  it("needs a key", async () => {
    const res = await intel.call({ id: acme.id, key: "nope" }, "GET", "/api/brand");
    expect(res.status).toBe(401);
  });
});
