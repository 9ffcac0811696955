import { monotonicFactory } from "ulid";

const next = monotonicFactory();

export const ID_PREFIXES = {
  source: "kb",
  crawl: "crawl",
  competitor: "comp",
  event: "evt",
  artifact: "art",
  workspace: "ws",
  key: "key",
  webhook: "wh",
  /** A webhook event: its `webhook-id`, the same on every attempt. */
  message: "msg",
  /** An export of a workspace's data (`POST /api/export`). */
  export: "exp",
  /** A competitor alert rule. */
  rule: "rule",
  /** A competitor page's screenshot, kept as a check's evidence. */
  screenshot: "shot",
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** A prefixed, time-sortable id such as `kb_01JD3...`: newer ids sort after older ones. */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${next()}`;
}

const ULID = "[0-9A-HJKMNP-TV-Z]{26}";
const patterns = Object.fromEntries(
  Object.entries(ID_PREFIXES).map(([kind, prefix]) => [kind, new RegExp(`^${prefix}_${ULID}$`)]),
) as Record<IdKind, RegExp>;

export function isId(kind: IdKind, value: string): boolean {
  return patterns[kind].test(value);
}
