import { describe, expect, it } from "vitest";
import { competitorRoutes } from "../../lib/competitors/routes.js";
import { openApiDocument } from "../../lib/http/docs.js";

describe("the competitor routes' OpenAPI reference", () => {
  const document = openApiDocument(competitorRoutes);

  it("documents every competitor and event route", () => {
    expect(Object.keys(document.paths ?? {}).sort()).toEqual([
      "/api/intel/competitors",
      "/api/intel/competitors/check-all",
      "/api/intel/competitors/{id}",
      "/api/intel/competitors/{id}/check",
      "/api/intel/events",
      "/api/intel/events/{id}",
    ]);
    expect(Object.keys(document.paths?.["/api/intel/competitors"]?.post?.responses ?? {})).toEqual(
      expect.arrayContaining(["201", "400", "409"]),
    );
    expect(
      Object.keys(document.paths?.["/api/intel/competitors/check-all"]?.post?.responses ?? {}),
    ).toContain("202");
  });

  it("names the event filters and the page size limit", () => {
    const parameters = (document.paths?.["/api/intel/events"]?.get?.parameters ?? []) as Array<{
      name: string;
      schema: { maximum?: number; default?: number; enum?: string[] };
    }>;
    const byName = Object.fromEntries(parameters.map((p) => [p.name, p.schema]));
    expect(Object.keys(byName).sort()).toEqual([
      "competitorId",
      "cursor",
      "isRead",
      "limit",
      "severity",
      "type",
    ]);
    expect(byName.limit).toMatchObject({ maximum: 100, default: 20 });
    expect(byName.severity?.enum).toEqual(["low", "medium", "high", "critical"]);
    expect(byName.type?.enum).toEqual(["pricing", "hiring", "content", "messaging"]);
  });
});
