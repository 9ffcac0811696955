import { DomainError } from "../../errors.js";
import { createModule } from "../../http/app.js";
import type { FilterExpression } from "../../knowledge/retrieval/filter-expression.js";
import { ALL_MODULES, MODULE_NAMES } from "../modules/index.js";
import { moduleRoute } from "./contract.js";
import type { IntelGenerator } from "./generator.js";

/**
 * The marketing intel modules: POST /api/intel/{module}. Each module has its own route here, so
 * its body is validated against its own schema; any other module name is a 404 naming the valid
 * ones (literal routes win over the `{module}` parameter, in Hono as on API Gateway).
 */
export function generateRoutes({ generator }: { generator: IntelGenerator }) {
  const app = createModule();
  for (const module of ALL_MODULES) {
    app.openapi(moduleRoute(module), async (c) => {
      const { save, filters, ...input } = c.req.valid("json") as {
        save?: boolean;
        filters?: FilterExpression;
      };
      const options = { save, filters };
      return c.json(await generator.generate(c.get("workspaceId"), module, input, options), 200);
    });
  }
  app.post("/api/intel/:module", (c) => {
    throw new DomainError(
      "not_found",
      `No intel module ${c.req.param("module")}; the modules are ${MODULE_NAMES.join(", ")}`,
      { details: { modules: MODULE_NAMES } },
    );
  });
  return app;
}
