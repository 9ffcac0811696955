import { exportFile } from "../../files/export-file.js";
import { createModule } from "../../http/app.js";
import type { Artifacts } from "./artifacts.js";
import {
  createArtifact,
  deleteArtifact,
  exportArtifact,
  getArtifact,
  listArtifacts,
  patchArtifact,
} from "./contract.js";
import { artifactMarkdown } from "./markdown.js";

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

  app.openapi(exportArtifact, async (c) => {
    // The key names the caller's workspace: another workspace's artifact is not found.
    const artifact = await artifacts.get(c.get("workspaceId"), c.req.valid("param").id);
    const { body, headers } = await exportFile(
      artifact.title,
      artifactMarkdown(artifact),
      c.req.valid("query").format,
    );
    return c.body(body, 200, headers);
  });

  return app;
}
