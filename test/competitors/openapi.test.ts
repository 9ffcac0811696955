import { describe, expect, it } from "vitest";
import { competitorsContract } from "../../lib/competitors/contract.js";
import { openApiDocument } from "../../lib/http/docs.js";

describe("the competitor routes' OpenAPI reference", () => {
  const document = openApiDocument(competitorsContract);

  it("documents every competitor and event route", () => {
    expect(Object.keys(document.paths ?? {}).sort()).toEqual([
      "/api/intel/alert-rules",
      "/api/intel/alert-rules/test",
      "/api/intel/alert-rules/{id}",
      "/api/intel/competitors",
      "/api/intel/competitors/check-all",
      "/api/intel/competitors/{id}",
      "/api/intel/competitors/{id}/check",
      "/api/intel/competitors/{id}/history",
      "/api/intel/competitors/{id}/prices",
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
      style?: string;
      explode?: boolean;
      schema: {
        type?: string;
        maximum?: number;
        default?: number;
        enum?: string[];
        items?: { enum?: string[] };
      };
    }>;
    const byName = Object.fromEntries(parameters.map((p) => [p.name, p.schema]));
    expect(Object.keys(byName).sort()).toEqual([
      "alert",
      "competitorId",
      "cursor",
      "isActioned",
      "isRead",
      "kind",
      "limit",
      "severity",
      "since",
      "type",
      "until",
    ]);
    expect(byName.limit).toMatchObject({ maximum: 100, default: 20 });
    // List filters take one value or several: arrays, the parameter repeated (form, exploded).
    expect(byName.severity?.items?.enum).toEqual(["low", "medium", "high", "critical"]);
    expect(byName.type?.items?.enum).toEqual(["pricing", "hiring", "content", "messaging"]);
    expect(byName.kind?.items?.enum).toContain("moved_to_contact_sales");
    for (const name of ["severity", "type", "kind", "competitorId"]) {
      expect(parameters.find((p) => p.name === name)).toMatchObject({
        style: "form",
        explode: true,
        schema: { type: "array" },
      });
    }
    expect(byName.isActioned?.enum).toEqual(["true", "false", "1", "0"]);
  });
});
