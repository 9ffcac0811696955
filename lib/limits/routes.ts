import { createModule } from "../http/app.js";
import type { Caps } from "./caps.js";
import { getUsage } from "./contract.js";
import type { Quotas } from "./quotas.js";

/** The workspace's usage of its daily quotas and of its caps: /api/usage. */
export function usageRoutes({ quotas, caps }: { quotas: Quotas; caps: Caps }) {
  const app = createModule();
  app.openapi(getUsage, async (c) => {
    const workspaceId = c.get("workspaceId");
    const [usage, limits] = await Promise.all([quotas.usage(workspaceId), caps.usage(workspaceId)]);
    return c.json({ ...usage, limits }, 200);
  });
  return app;
}
