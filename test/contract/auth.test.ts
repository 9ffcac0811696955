import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Client, misfits, type OpenApi, type Service, startService } from "./support.js";

/**
 * Authentication as the interface document describes it: every request carries
 * `Authorization: Bearer <API_KEY>`. The result of a missing or invalid key and the error body's
 * shape are "not shown" there: they must be what /openapi.json documents.
 */

let service: Service;
let api: Client;
let openapi: OpenApi;

beforeAll(async () => {
  service = await startService();
  api = service.client;
  openapi = service.openapi;
});
afterAll(() => service?.close());

interface Endpoint {
  method: string;
  /** As /openapi.json names the path. */
  template: string;
  path: string;
  json?: unknown;
}

/** Every endpoint the interface document names, with a body of the documented shape. */
const ENDPOINTS: Endpoint[] = [
  { method: "POST", template: "/api/knowledge", path: "/api/knowledge", json: { text: "x" } },
  {
    method: "POST",
    template: "/api/knowledge/crawl",
    path: "/api/knowledge/crawl",
    // Not a URL: nothing is crawled when the key is valid either.
    json: { seedUrl: "not a url", maxPages: 1 },
  },
  { method: "GET", template: "/api/knowledge", path: "/api/knowledge" },
  {
    method: "PATCH",
    template: "/api/knowledge/{id}",
    path: "/api/knowledge/kb_unknown",
    json: { enabled: false },
  },
  {
    method: "POST",
    template: "/api/knowledge/{id}/reindex",
    path: "/api/knowledge/kb_unknown/reindex",
  },
  { method: "DELETE", template: "/api/knowledge/{id}", path: "/api/knowledge/kb_unknown" },
  ...["persona", "competitor", "gtm", "journey", "messaging", "kpi"].map((module) => ({
    method: "POST",
    template: "/api/intel/{module}",
    path: `/api/intel/${module}`,
    json: { segment: "Heads of growth" },
  })),
  { method: "GET", template: "/api/intel/competitors", path: "/api/intel/competitors" },
  {
    method: "POST",
    template: "/api/intel/competitors",
    path: "/api/intel/competitors",
    json: { domain: "rival-labs.com" },
  },
  {
    method: "POST",
    template: "/api/intel/competitors/{id}/check",
    path: "/api/intel/competitors/comp_unknown/check",
  },
  { method: "GET", template: "/api/intel/events", path: "/api/intel/events" },
];

const name = (e: Endpoint) => `${e.method} ${e.path}`;

describe("authentication", () => {
  it("documents a bearer API key for every endpoint of the interface document", () => {
    for (const endpoint of ENDPOINTS) {
      expect(openapi.securityScheme(endpoint.method, endpoint.template), name(endpoint)).toEqual(
        expect.objectContaining({ type: "http", scheme: "bearer" }),
      );
    }
  });

  it.each([
    ["no Authorization header", null],
    ["an unknown key", "kbi_not_a_key_that_was_ever_issued"],
    ["an empty key", ""],
  ])("answers %s with the status and error body /openapi.json documents", async (_, key) => {
    for (const endpoint of ENDPOINTS) {
      const answer = await api.send(endpoint.method, endpoint.path, {
        key,
        ...(endpoint.json === undefined ? {} : { json: endpoint.json }),
      });
      const documented = openapi.operation(endpoint.method, endpoint.template).responses;
      // The one status /openapi.json gives for a missing or invalid key.
      const forKeys = Object.entries(documented)
        .filter(([, response]) => /API key/i.test(response.description))
        .map(([status]) => Number(status));
      expect(forKeys, `${name(endpoint)} documents its answer to a bad key`).toHaveLength(1);
      expect(answer.status, name(endpoint)).toBe(forKeys[0]);
      expect(
        misfits(
          openapi.responseSchema(endpoint.method, endpoint.template, answer.status),
          answer.body,
        ),
        name(endpoint),
      ).toEqual([]);
    }
  });

  it("answers every endpoint with the key with a status /openapi.json documents for it", async () => {
    for (const endpoint of ENDPOINTS) {
      const answer = await api.send(endpoint.method, endpoint.path, {
        ...(endpoint.json === undefined ? {} : { json: endpoint.json }),
      });
      expect(answer.status, `${name(endpoint)}: ${JSON.stringify(answer.body)}`).not.toBe(401);
      expect(openapi.statuses(endpoint.method, endpoint.template), name(endpoint)).toContain(
        answer.status,
      );
      if (answer.status >= 400) {
        expect(
          misfits(
            openapi.responseSchema(endpoint.method, endpoint.template, answer.status),
            answer.body,
          ),
          name(endpoint),
        ).toEqual([]);
      }
    }
  });
});
