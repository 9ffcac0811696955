import { createModule } from "../http/app.js";
import type { Uploads } from "./uploads.js";
import { createUpload } from "./uploads-routes.js";

/** `POST /api/knowledge/uploads`: presigned uploads for large files. */
export function uploadsApi({ uploads }: { uploads: Uploads }) {
  const app = createModule();

  app.openapi(createUpload, async (c) => {
    const pending = await uploads.create(c.get("workspaceId"), c.req.valid("json"));
    return c.json(pending, 200);
  });

  return app;
}
