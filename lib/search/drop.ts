import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { engine, storageOptions } from "./engine.js";
import type { SearchSettings } from "./options.js";
import { checkWorkspace, type Workspaces } from "./workspaces.js";

/**
 * Erasing a workspace's index: its database dropped, table by table with their files, and on
 * local disk its folder removed, so nothing under `<base>/<workspaceId>/` is left. In an S3
 * bucket that keeps versions the engine's deletes leave older versions behind: the caller purges
 * the prefix (lib/workspaces/erasure.ts).
 */

/** The workspace's folder when the index is on local disk; undefined in an object store. */
function localFolder(uri: string, workspaceId: string): string | undefined {
  if (uri.startsWith("file://")) return join(fileURLToPath(uri), workspaceId);
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(uri) ? undefined : join(uri, workspaceId);
}

/** Drops the workspace's database under its writer lock, so no write of it interleaves. */
export async function dropWorkspace(
  settings: SearchSettings,
  workspaces: Workspaces,
  workspaceId: string,
): Promise<void> {
  checkWorkspace(workspaceId);
  await settings.lock.withLock(workspaceId, async () => {
    const workspace = await workspaces.get(workspaceId);
    await workspace.db.dropAllTables();
    workspaces.forget(workspaceId);
    const folder = localFolder(settings.location.uri, workspaceId);
    if (folder) await rm(folder, { recursive: true, force: true });
  });
}

/** Whether anything of the workspace's database is stored: its folder, or a table in the store. */
export async function holdsWorkspace(
  settings: SearchSettings,
  workspaceId: string,
): Promise<boolean> {
  checkWorkspace(workspaceId);
  const folder = localFolder(settings.location.uri, workspaceId);
  if (folder) return existsSync(folder);
  const { lance } = await engine();
  const options = storageOptions(settings.location.s3);
  const db = await lance.connect(`${settings.location.uri.replace(/\/+$/, "")}/${workspaceId}`, {
    ...(options ? { storageOptions: options } : {}),
  });
  return (await db.tableNames()).length > 0;
}
