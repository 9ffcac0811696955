import type { KeyStore } from "../auth/keys.js";
import { COMPETITOR_INDEX } from "../competitors/competitors.js";
import { invalid } from "../errors.js";
import { isId } from "../ids.js";
import type { SearchIndex } from "../search/index.js";
import type { Blobs } from "../store/blobs.js";
import { type Table, wsKey } from "../store/table.js";
import { exportBlobPrefix } from "./export/exports.js";

/**
 * Erasing a workspace: everything stored of it, wherever it lives, for good. Every place is found
 * again from the workspace's id alone, so a run cut short at any point leaves only what the next
 * run finds: API keys are the one thing stored under their hash, found through their listing (see
 * `KeyStore.deleteKey`), so a key's own item goes before its listing. The order:
 *
 * 1. its API keys: its requests are refused from then on (within `KEY_CACHE_SECONDS`);
 * 2. its entries in the competitor sweep's shared partition (`COMPETITORS`, `{ws}#…`);
 * 3. every item of its partition (`WS#{ws}`): records, counters, claims, leases, idempotency
 *    records, export jobs; a worker still holding one of its messages finds nothing and stops;
 * 4. its search index (`search/{ws}/`), under the index's writer lock;
 * 5. its files, with every older version, in each of its bucket prefixes;
 * 6. its entry in the list of workspaces, last: until then `npm run keys -- list` shows it, so an
 *    erasure that did not finish is in sight.
 *
 * Deleting again what is gone changes nothing: running it twice, or again after a crash, is safe.
 */

export interface ErasureDeps {
  table: Table;
  blobs: Blobs;
  keys: KeyStore;
  search: SearchIndex;
  /**
   * Where the search index keeps the workspace's files in the bucket, when it lives there
   * (`s3://<bucket>/search`, the deploy's default): purged with their older versions.
   */
  searchPrefix?: ((workspaceId: string) => string) | undefined;
}

/** The bucket prefixes of a workspace's files: sources and snapshots, uploads, export bundles. */
export const workspaceBlobPrefixes = (workspaceId: string) => [
  `ws/${workspaceId}/`,
  `uploads/ws/${workspaceId}/`,
  exportBlobPrefix(workspaceId),
];

/** A workspace's entries in the competitor sweep's partition start with its id and `#`. */
const sweepPrefix = (workspaceId: string) => `${workspaceId}#`;

/** What one step removed. */
export interface Erased {
  step: string;
  removed: number;
}

/** What is still stored of a workspace, place by place: all zero once it is erased. */
export interface Remains {
  keys: number;
  sweepEntries: number;
  records: number;
  searchIndex: number;
  files: number;
  listed: number;
}

/** Refuses anything but a workspace id: a blank or partial one would name other tenants' data. */
function checked(workspaceId: string): string {
  if (!isId("workspace", workspaceId)) {
    throw invalid(`Not a workspace id: ${JSON.stringify(workspaceId)} (ws_ and 26 characters)`);
  }
  return workspaceId;
}

/** Erases the workspace (see above); answers what each step removed. */
export async function eraseWorkspace(deps: ErasureDeps, id: string): Promise<Erased[]> {
  const workspaceId = checked(id);
  const { table, blobs, keys, search } = deps;
  const done: Erased[] = [];

  let removedKeys = 0;
  for (const key of await keys.keysOf(workspaceId)) {
    if (await keys.deleteKey(key.keyId)) removedKeys++;
  }
  done.push({ step: "API keys", removed: removedKeys });

  done.push({
    step: "competitor sweep entries",
    removed: await table.deleteAll(COMPETITOR_INDEX, sweepPrefix(workspaceId)),
  });

  done.push({ step: "records", removed: await table.deleteAll(wsKey(workspaceId), "") });

  const indexed = await search.holdsWorkspace(workspaceId);
  await search.dropWorkspace(workspaceId);
  // The writer lock's lease was an item of the partition while the index was dropped.
  await table.deleteAll(wsKey(workspaceId), "");
  const searchFiles = deps.searchPrefix ? await blobs.purge(deps.searchPrefix(workspaceId)) : 0;
  done.push({ step: "search index", removed: Math.max(Number(indexed), searchFiles) });

  for (const prefix of workspaceBlobPrefixes(workspaceId)) {
    done.push({ step: `files ${prefix}`, removed: await blobs.purge(prefix) });
  }

  const listed = await keys.isListed(workspaceId);
  await keys.forgetWorkspace(workspaceId);
  done.push({ step: "workspace", removed: Number(listed) });
  return done;
}

/** What is still stored of a workspace: how an erasure is checked, and shown by the command. */
export async function remainsOf(deps: ErasureDeps, id: string): Promise<Remains> {
  const workspaceId = checked(id);
  const { table, blobs, keys, search } = deps;
  const prefixes = [
    ...workspaceBlobPrefixes(workspaceId),
    ...(deps.searchPrefix ? [deps.searchPrefix(workspaceId)] : []),
  ];
  let files = 0;
  for (const prefix of prefixes) files += await blobs.countUnder(prefix);
  return {
    keys: (await keys.keysOf(workspaceId)).length,
    sweepEntries: (await table.all(COMPETITOR_INDEX, sweepPrefix(workspaceId), ["sk"])).length,
    records: (await table.all(wsKey(workspaceId), "", ["sk"])).length,
    searchIndex: Number(await search.holdsWorkspace(workspaceId)),
    files,
    listed: Number(await keys.isListed(workspaceId)),
  };
}
