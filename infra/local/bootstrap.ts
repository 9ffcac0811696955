import type { KeyStore } from "../../lib/auth/keys.js";
import type { Item, Table } from "../../lib/store/table.js";

const MARKER = { pk: "SYSTEM", sk: "DEFAULT_WORKSPACE" } as const;

export interface DefaultWorkspace {
  workspaceId: string;
  /** A key created on this start, to be shown once; absent when none was created. */
  newKey?: string;
}

/**
 * Forgets the default workspace when it is the one erased (`npm run workspace -- delete`): the
 * marker names it, and the next start creates a new one. Answers whether it did.
 */
export async function forgetDefaultWorkspace(table: Table, workspaceId: string): Promise<boolean> {
  const marker = await table.get<Item & { workspaceId: string }>(MARKER.pk, MARKER.sk);
  return marker?.workspaceId === workspaceId && (await table.delete(MARKER.pk, MARKER.sk));
}

/**
 * The local runtime's default workspace. With `apiKey`, that key is registered for it
 * (idempotently); without one, a key is created on the very first start only.
 */
export async function ensureDefaultWorkspace(
  table: Table,
  keys: KeyStore,
  apiKey?: string,
): Promise<DefaultWorkspace> {
  const marker = await table.get<Item & { workspaceId: string }>(MARKER.pk, MARKER.sk);
  let workspaceId = marker?.workspaceId;
  const firstStart = !workspaceId;
  if (!workspaceId) {
    workspaceId = (await keys.createWorkspace("Default workspace")).id;
    if (!(await table.create({ ...MARKER, workspaceId }))) {
      return ensureDefaultWorkspace(table, keys, apiKey);
    }
  }
  if (apiKey) {
    await keys.registerKey(workspaceId, apiKey, "API_KEY");
    return { workspaceId };
  }
  if (firstStart)
    return { workspaceId, newKey: (await keys.createKey(workspaceId, "first start")).key };
  return { workspaceId };
}
