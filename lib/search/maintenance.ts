import { engine } from "./engine.js";
import type { SearchSettings } from "./options.js";
import { Tiers } from "./tiers.js";
import { checkWorkspace, type Workspaces } from "./workspaces.js";

/**
 * Brings every row written into an index (after a bulk load): each recent table sealed into
 * segments, and every merge that is due done.
 */
export async function optimizeWorkspace(
  settings: SearchSettings,
  workspaces: Workspaces,
  workspaceId: string,
): Promise<void> {
  checkWorkspace(workspaceId);
  const eng = await engine();
  await settings.lock.withLock(workspaceId, async () => {
    const tiers = await Tiers.open(eng, await workspaces.get(workspaceId), settings);
    await tiers.maintain(true);
  });
}
