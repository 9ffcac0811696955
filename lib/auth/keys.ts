import { createHash, randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import { displayTextProblem } from "../display-text.js";
import { conflict, invalid } from "../errors.js";
import { newId } from "../ids.js";
import type { Item, Table } from "../store/table.js";

/**
 * Workspaces and their API keys. Only a SHA-256 hash of a key is stored: the key item's
 * partition is `KEY#{hash}`, so verifying a key is one read. A second item per key under the
 * `KEYS` partition lists keys for the CLI without scanning.
 */

export interface Workspace {
  id: string;
  name: string;
  createdAt: string;
}

export interface KeyInfo {
  keyId: string;
  workspaceId: string;
  label: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

type KeyItem = Item & KeyInfo & { hash: string };

const KEY_FORMAT = /^[A-Za-z0-9._~+/=-]{16,256}$/;

export const hashKey = (key: string) => createHash("sha256").update(key).digest("hex");

export function generateKey(): string {
  return `kbi_${randomBytes(24).toString("base64url")}`;
}

export function isWellFormedKey(key: string): boolean {
  return KEY_FORMAT.test(key);
}

/** Longest workspace name or key label. */
const MAX_LABEL = 200;

/**
 * A workspace's name or a key's label as given, trimmed: `keys list` shows it, so it is a display
 * string (lib/display-text.ts), refused naming `field` otherwise.
 */
function displayed(field: string, value: string): string {
  const text = value.trim();
  const problem =
    text.length > MAX_LABEL ? `Has more than ${MAX_LABEL} characters` : displayTextProblem(text);
  if (problem) {
    throw invalid(`The ${field} is not valid: ${problem}`, {
      issues: [{ path: field, message: problem }],
    });
  }
  return text;
}

export class KeyStore {
  /**
   * Verified keys (their hash) for `cacheSeconds`, unknown ones too; past `cacheEntries` the least
   * recently used goes, so a flood of made-up keys can neither grow it nor push every real key out.
   * Timed by the wall clock (`Date`), to the millisecond.
   */
  private readonly cache: LRUCache<string, { workspaceId: string | null }> | undefined;

  constructor(
    private readonly table: Table,
    cacheSeconds = 30,
    cacheEntries = 10_000,
  ) {
    // With no cache time an entry would expire as it is written: no cache at all.
    this.cache =
      cacheSeconds > 0
        ? new LRUCache({
            max: cacheEntries,
            ttl: cacheSeconds * 1000,
            ttlResolution: 0,
            perf: Date,
          })
        : undefined;
  }

  async createWorkspace(name: string): Promise<Workspace> {
    const workspace = {
      id: newId("workspace"),
      name: displayed("name", name),
      createdAt: new Date().toISOString(),
    };
    await this.table.put({ pk: `WS#${workspace.id}`, sk: "META", ...workspace });
    await this.table.put({ pk: "WORKSPACES", sk: workspace.id, ...workspace });
    return workspace;
  }

  async getWorkspace(id: string): Promise<Workspace | undefined> {
    const item = await this.table.get<Item & Workspace>(`WS#${id}`, "META");
    return item && { id: item.id, name: item.name, createdAt: item.createdAt };
  }

  async listWorkspaces(): Promise<Workspace[]> {
    const items = await this.table.all<Item & Workspace>("WORKSPACES", "ws_");
    return items.map(({ id, name, createdAt }) => ({ id, name, createdAt }));
  }

  /** Stores a key for a workspace. Registering the same key for the same workspace again is a no-op. */
  async registerKey(workspaceId: string, key: string, label = "default"): Promise<KeyInfo> {
    if (!isWellFormedKey(key)) {
      throw invalid("A key is 16 to 256 URL-safe characters");
    }
    const shown = displayed("label", label);
    const hash = hashKey(key);
    const existing = await this.table.get<KeyItem>(`KEY#${hash}`, "KEY");
    if (existing) {
      if (existing.workspaceId !== workspaceId) {
        throw conflict("That key belongs to another workspace");
      }
      return toInfo(existing);
    }
    const info: KeyInfo = {
      keyId: newId("key"),
      workspaceId,
      label: shown,
      prefix: key.slice(0, 8),
      createdAt: new Date().toISOString(),
      revokedAt: null,
    };
    // The listing item first: a key is never usable without being visible to `keys list`.
    await this.table.put({ pk: "KEYS", sk: info.keyId, hash, ...info });
    if (!(await this.table.create({ pk: `KEY#${hash}`, sk: "KEY", hash, ...info }))) {
      // A concurrent registration of the same key won: its listing stands, this one goes.
      await this.table.delete("KEYS", info.keyId);
      return this.registerKey(workspaceId, key, label);
    }
    return info;
  }

  async createKey(workspaceId: string, label = "default"): Promise<{ key: string; info: KeyInfo }> {
    const key = generateKey();
    return { key, info: await this.registerKey(workspaceId, key, label) };
  }

  async listKeys(): Promise<KeyInfo[]> {
    return (await this.table.all<KeyItem>("KEYS", "key_")).map(toInfo);
  }

  /** Revokes a key by its id; false when no such key exists. */
  async revokeKey(keyId: string): Promise<boolean> {
    const listing = await this.table.get<KeyItem>("KEYS", keyId);
    if (!listing) return false;
    const revokedAt = listing.revokedAt ?? new Date().toISOString();
    await this.table.update(`KEY#${listing.hash}`, "KEY", { revokedAt });
    await this.table.update("KEYS", keyId, { revokedAt });
    return true;
  }

  /** Every key of a workspace, revoked ones included. */
  async keysOf(workspaceId: string): Promise<KeyInfo[]> {
    return (await this.listKeys()).filter((key) => key.workspaceId === workspaceId);
  }

  /**
   * Deletes a key for good (erasing its workspace); false when there is no such key. The key's
   * own item goes first: its listing is the only way to find it, so a run cut short between the
   * two leaves the listing, and the next run finds the key through it.
   */
  async deleteKey(keyId: string): Promise<boolean> {
    const listing = await this.table.get<KeyItem>("KEYS", keyId);
    if (!listing) return false;
    await this.table.delete(`KEY#${listing.hash}`, "KEY");
    this.cache?.delete(listing.hash);
    await this.table.delete("KEYS", keyId);
    return true;
  }

  /** Takes a workspace off the list of workspaces: the last step of erasing it. */
  async forgetWorkspace(id: string): Promise<void> {
    await this.table.delete("WORKSPACES", id);
  }

  /** Whether the list of workspaces still names the workspace. */
  async isListed(id: string): Promise<boolean> {
    return (await this.table.get("WORKSPACES", id)) !== undefined;
  }

  /** The workspace a key belongs to, or null for unknown, revoked or malformed keys. */
  async verify(key: string): Promise<string | null> {
    if (!isWellFormedKey(key)) return null;
    const hash = hashKey(key);
    const cached = this.cache?.get(hash);
    if (cached) return cached.workspaceId;
    // Stryker disable next-line BooleanLiteral: consistency only changes cost and staleness on AWS
    const item = await this.table.get<KeyItem>(`KEY#${hash}`, "KEY", false);
    const workspaceId = item && !item.revokedAt ? item.workspaceId : null;
    this.cache?.set(hash, { workspaceId });
    return workspaceId;
  }
}

function toInfo(item: KeyItem): KeyInfo {
  const { keyId, workspaceId, label, prefix, createdAt, revokedAt } = item;
  return { keyId, workspaceId, label, prefix, createdAt, revokedAt: revokedAt ?? null };
}
