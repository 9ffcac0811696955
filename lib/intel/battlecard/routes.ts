import { exportFile } from "../../files/export-file.js";
import { createModule } from "../../http/app.js";
import type { Battlecards } from "./battlecards.js";
import { competitorBattlecard } from "./contract.js";

/** A competitor's battlecard as a file: /api/intel/competitors/{id}/battlecard. */
export function battlecardRoutes({ battlecards }: { battlecards: Battlecards }) {
  const app = createModule();

  app.openapi(competitorBattlecard, async (c) => {
    const card = await battlecards.write(c.get("workspaceId"), c.req.valid("param").id);
    const { body, headers } = await exportFile(
      card.title,
      card.markdown,
      c.req.valid("query").format,
    );
    return c.body(body, 200, headers);
  });

  return app;
}
