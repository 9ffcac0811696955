import { createModule } from "../http/app.js";
import type { Quotas } from "./quotas.js";
import { getUsage } from "./routes.js";

/** The workspace's usage of its daily quotas: /api/usage. */
export function usageApi({ quotas }: { quotas: Quotas }) {
  const app = createModule();
  app.openapi(getUsage, async (c) => c.json(await quotas.usage(c.get("workspaceId")), 200));
  return app;
}
