import { createRoute } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { localGateway } from "../../../infra/local/gateway.js";
import { createModule, createServiceApp } from "../../../lib/http/app.js";

/** A function app answering its name on the given POST routes. */
function fn(name: string, paths: string[]) {
  const module = createModule();
  for (const path of paths) {
    module.openapi(
      createRoute({ method: "post", path, responses: { 200: { description: name } } }),
      (c) => c.json({ name }, 200),
    );
  }
  return createServiceApp({ authenticate: async (_c, next) => next(), modules: [module] });
}

describe("the local gateway", () => {
  const gateway = localGateway([
    fn("generic", ["/api/intel/{module}"]),
    fn("specific", ["/api/intel/competitors", "/api/intel/competitors/{id}/check"]),
  ]);
  const post = async (path: string) =>
    gateway.fetch(new Request(`http://local${path}`, { method: "POST" }));

  it("sends a path to the function whose route is most specific, as API Gateway does", async () => {
    expect(await (await post("/api/intel/competitors")).json()).toEqual({ name: "specific" });
    expect(await (await post("/api/intel/persona")).json()).toEqual({ name: "generic" });
    expect(await (await post("/api/intel/competitors/comp_1/check")).json()).toEqual({
      name: "specific",
    });
  });

  it("answers paths no function owns with the service's 404", async () => {
    const res = await post("/api/nowhere");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "not_found" } });
  });
});
