import { DomainError } from "../../errors.js";
import { createModule } from "../../http/app.js";
import { getBrand, putBrand } from "./contract.js";
import type { BrandProfiles } from "./profiles.js";

/** The brand profile: /api/brand. */
export function brandRoutes({ brands }: { brands: BrandProfiles }) {
  const app = createModule();

  app.openapi(getBrand, async (c) => {
    const profile = await brands.get(c.get("workspaceId"));
    if (!profile) {
      throw new DomainError("not_found", "No brand profile yet; save one with PUT /api/brand");
    }
    return c.json(profile, 200);
  });

  app.openapi(putBrand, async (c) => {
    return c.json(await brands.put(c.get("workspaceId"), c.req.valid("json")), 200);
  });

  return app;
}
