import { createModule } from "../../http/app.js";
import type { Artifacts } from "./artifacts.js";
import {
  createArtifact,
  deleteArtifact,
  getArtifact,
  listArtifacts,
  patchArtifact,
} from "./contract.js";

/** Saved intel artifacts: /api/artifacts, /api/artifacts/{id}. */
export function artifactsRoutes({ artifacts }: { artifacts: Artifacts }) {
  const app = createModule();

  app.openapi(createArtifact, async (c) =>
    c.json(await artifacts.create(c.get("workspaceId"), c.req.valid("json")), 201),
  );

  app.openapi(listArtifacts, async (c) => {
    const { module, limit, cursor } = c.req.valid("query");
    const page = await artifacts.list(c.get("workspaceId"), module, limit, cursor);
    return c.json({ artifacts: page.items, nextCursor: page.nextCursor }, 200);
  });

  app.openapi(getArtifact, async (c) =>
    c.json(await artifacts.get(c.get("workspaceId"), c.req.valid("param").id), 200),
  );

  app.openapi(patchArtifact, async (c) => {
    const { id } = c.req.valid("param");
    return c.json(await artifacts.rename(c.get("workspaceId"), id, c.req.valid("json").title), 200);
  });

  app.openapi(deleteArtifact, async (c) => {
    await artifacts.delete(c.get("workspaceId"), c.req.valid("param").id);
    return c.body(null, 204);
  });

  return app;
}
