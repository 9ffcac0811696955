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
    const pending = await uploads.create(workspaceId, request, (bytes) =>
      quotas.consume(workspaceId, "upload_bytes", bytes),
    );
    return c.json(pending, 200);
  });

  return app;
}
