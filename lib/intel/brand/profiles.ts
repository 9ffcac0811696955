import { z } from "@hono/zod-openapi";
import { displayText } from "../../http/schemas.js";
import { type Item, type Table, wsKey } from "../../store/table.js";

const text = (max: number) => z.string().trim().min(1).max(max);
const list = (items: number, each: number, description: string, item = text(each)) =>
  z
    .array(item)
    .max(items)
    .optional()
    .openapi({ description: `${description} (up to ${items}, each up to ${each} characters)` });

/** A bare host name such as `acme.com`: never fetched by this module, only named in prompts. */
const HOSTNAME =
  /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;

/**
 * The brand profile a workspace saves. Every field is bounded so a whole profile (~40 KB at
 * most) fits one item and a prompt's share of the context window.
 */
export const BrandProfileInput = z
  .strictObject({
    name: displayText(200, "The company's name").openapi({ example: "Acme Analytics" }),
    domain: z
      .string()
      .trim()
      .toLowerCase()
      .regex(HOSTNAME, "A domain such as acme.com (no scheme, no path)")
      .optional()
      .openapi({ example: "acme.com" }),
    description: text(4000).openapi({ description: "What the company does and for whom" }),
    audience: text(2000).optional().openapi({ description: "Who the brand sells to" }),
    tone: text(500).optional().openapi({ example: "Plain-spoken, confident, no jargon" }),
    valueProps: list(20, 300, "Value propositions"),
    products: list(50, 300, "Products or plans", displayText(300)),
    differentiators: list(20, 300, "What sets the brand apart"),
    competitors: list(25, 200, "Competitors by name or domain", displayText(200)),
  })
  .openapi("BrandProfileInput");

/**
 * The saved profile, defined whole: `BrandProfileInput.extend()` documents as an `allOf` of two
 * closed objects, which no profile matches.
 */
export const BrandProfileSchema = z
  .strictObject({
    ...BrandProfileInput.shape,
    updatedAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("BrandProfile");

export type BrandProfileInput = z.infer<typeof BrandProfileInput>;
export type BrandProfile = z.infer<typeof BrandProfileSchema>;

/** The profile's item: one per workspace, in the workspace's partition. */
export const BRAND_SK = "BRAND";

type BrandItem = Item & BrandProfile;

/** Brand profiles, one per workspace. */
export class BrandProfiles {
  constructor(private readonly table: Table) {}

  async get(workspaceId: string): Promise<BrandProfile | undefined> {
    const item = await this.table.get<BrandItem>(wsKey(workspaceId), BRAND_SK);
    if (!item) return undefined;
    const { pk: _pk, sk: _sk, ...profile } = item;
    return profile;
  }

  /** Replaces the profile as a whole: a field left out is removed. */
  async put(workspaceId: string, input: BrandProfileInput): Promise<BrandProfile> {
    const profile: BrandProfile = { ...input, updatedAt: new Date().toISOString() };
    await this.table.put({ pk: wsKey(workspaceId), sk: BRAND_SK, ...profile });
    return profile;
  }
}
