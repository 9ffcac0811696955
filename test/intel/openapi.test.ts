import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../lib/http/docs.js";
import { brandContract } from "../../lib/intel/brand/contract.js";
import { chatContract } from "../../lib/intel/chat/contract.js";

describe("the intel routes' OpenAPI reference", () => {
  const document = openApiDocument([...brandContract, ...chatContract]);

  it("documents brand and chat, with the model errors and the event stream", () => {
    expect(Object.keys(document.paths ?? {})).toEqual(["/api/brand", "/api/chat"]);
    const chat = document.paths?.["/api/chat"]?.post;
    expect(Object.keys(chat?.responses ?? {})).toEqual(
      expect.arrayContaining(["200", "400", "401", "502", "503", "504"]),
    );
    const ok = chat?.responses?.["200"] as { content: Record<string, unknown> };
    expect(Object.keys(ok.content)).toEqual(["application/json", "text/event-stream"]);
  });

  it("names the brand profile's limits", () => {
    const input = document.components?.schemas?.BrandProfileInput as {
      required: string[];
      properties: Record<string, { maxLength?: number; maxItems?: number }>;
    };
    expect(input.required).toEqual(["name", "description"]);
    expect(input.properties.description?.maxLength).toBe(4000);
    expect(input.properties.competitors?.maxItems).toBe(25);
  });
});
