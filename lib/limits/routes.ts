import { createModule } from "../http/app.js";
import { getUsage } from "./contract.js";
import type { Quotas } from "./quotas.js";

/** The workspace's usage of its daily quotas: /api/usage. */
export function usageRoutes({ quotas }: { quotas: Quotas }) {
  const app = createModule();
  app.openapi(getUsage, async (c) => c.json(await quotas.usage(c.get("workspaceId")), 200));
  return app;
}
