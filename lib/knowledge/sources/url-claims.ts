import { createHash } from "node:crypto";
import { type Condition, equals } from "../../store/conditions.js";
import { type Item, type Table, wsKey } from "../../store/table.js";

/**
 * `KBURL#{hash}`: the claim of a canonical URL by the one source that stands for it, created with
 * a conditional put, so two adds of one URL, racing or not, make one source. `UrlClaims` is the
 * only code that writes them.
 */
const URL_PREFIX = "KBURL#";
// Stryker disable next-line MethodExpression: the whole hash tells the same keys apart
const urlKey = (url: string) =>
  `${URL_PREFIX}${createHash("sha256").update(url).digest("hex").slice(0, 32)}`;

export interface UrlClaim extends Item {
  sourceId: string;
  claimedAt: string;
}

/** The claim is still this source's: what taking it over or releasing it requires. */
const claimedBy = (sourceId: string): Condition => equals("sourceId", sourceId);

/** What `claimAll` reads of a source (a source record has it). */
export interface ClaimingSource {
  id: string;
  type: string;
  source_url_or_path: string | null;
  created_at: string;
}

/** What claiming a workspace's existing URL sources did (`claimUrlSources`). */
export interface UrlClaimCount {
  /** URL sources given the claim they lacked. */
  claimed: number;
  /** URL sources whose URL another, older source had claimed: copies to delete. */
  duplicates: string[];
}

/** The claims of a workspace's canonical URLs, one source each. */
export class UrlClaims {
  constructor(private readonly deps: { table: Table }) {}

  /** The claim of a URL, if any source has it. */
  owner(workspaceId: string, url: string): Promise<UrlClaim | undefined> {
    return this.deps.table.get<UrlClaim>(wsKey(workspaceId), urlKey(url));
  }

  /** Claims a URL for a source; false when a source has it already. */
  claim(workspaceId: string, url: string, sourceId: string, claimedAt: string): Promise<boolean> {
    return this.deps.table.create({ ...this.key(workspaceId, url), sourceId, claimedAt });
  }

  /**
   * Takes over the claim `seen` (left by an add that crashed before it wrote its source) for
   * another source; false when it changed since.
   */
  async takeOver(
    workspaceId: string,
    url: string,
    seen: UrlClaim,
    sourceId: string,
    claimedAt: string,
  ): Promise<boolean> {
    const { pk, sk } = this.key(workspaceId, url);
    const taken = await this.deps.table.update(
      pk,
      sk,
      { sourceId, claimedAt },
      claimedBy(seen.sourceId),
    );
    return taken !== undefined;
  }

  /** Frees the URL of a deleted source, unless another source claimed it meanwhile. */
  async release(workspaceId: string, url: string, sourceId: string): Promise<void> {
    const { pk, sk } = this.key(workspaceId, url);
    await this.deps.table.delete(pk, sk, claimedBy(sourceId));
  }

  /**
   * Gives every URL source among a workspace's `sources` (all of them, as listed by the caller)
   * the claim of its URL, oldest source first: URL sources added before one source per URL
   * existed have none, so adding their URL again would make a second source. A URL two old
   * sources share stays the older one's; the newer are reported, not deleted. Safe to run twice
   * and while the service runs (claims are conditional puts).
   */
  async claimAll(workspaceId: string, sources: readonly ClaimingSource[]): Promise<UrlClaimCount> {
    const urlSources = sources
      .filter((source) => source.type === "url" && source.source_url_or_path)
      .sort((a, b) => a.created_at.localeCompare(b.created_at));
    const result: UrlClaimCount = { claimed: 0, duplicates: [] };
    for (const source of urlSources) {
      const url = source.source_url_or_path as string;
      if (await this.claim(workspaceId, url, source.id, source.created_at)) result.claimed++;
      else if ((await this.owner(workspaceId, url))?.sourceId !== source.id) {
        result.duplicates.push(source.id);
      }
    }
    return result;
  }

  private key(workspaceId: string, url: string) {
    return { pk: wsKey(workspaceId), sk: urlKey(url) };
  }
}

/** `UrlClaims.claimAll` for a table: what `npm run migrate-index` runs on each workspace. */
export function claimUrlSources(
  table: Table,
  workspaceId: string,
  sources: readonly ClaimingSource[],
): Promise<UrlClaimCount> {
  return new UrlClaims({ table }).claimAll(workspaceId, sources);
}
