import { createModule } from "../../http/app.js";
import type { Quotas } from "../../limits/quotas.js";
import { createUpload } from "./contract.js";
import type { Uploads } from "./uploads.js";

/** `POST /api/knowledge/uploads`: presigned uploads for large files. */
export function uploadsRoutes({ uploads, quotas }: { uploads: Uploads; quotas: Quotas }) {
  const app = createModule();

  app.openapi(createUpload, async (c) => {
    const workspaceId = c.get("workspaceId");
    const request = c.req.valid("json");
    // An awaited upload is a source: refused at the sources cap, its bytes go back.
    const pending = await quotas.reserving(workspaceId, "upload_bytes", (reserve) =>
      uploads.create(workspaceId, request, reserve),
    );
    return c.json(pending, 200);
  });

  return app;
}
