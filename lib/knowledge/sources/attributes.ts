import { z } from "@hono/zod-openapi";

/**
 * What a client sets on a source beside its content: `metadata`, the attributes search filters
 * match (`../retrieval/filter-expression.ts`), and `chunking`, how its text is cut into chunks.
 * Both are set on create (every way of creating a source takes them), stored on the source's
 * record, and `metadata` changes with `PATCH`.
 */

export const MAX_METADATA_KEYS = 16;
const MAX_STRING = 512;
const MAX_LIST = 32;

/** The fields every source has, which filters match by these names: no attribute may take one. */
export const BUILT_IN_KEYS = ["type", "created_at", "indexed_at", "crawl_id", "source_id"] as const;

/** A key is a short identifier, so it reads the same in a filter, a URL or a spreadsheet. */
const KEY = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

export type MetadataValue = string | number | boolean | string[];
export type Metadata = Record<string, MetadataValue>;

const value = z
  .union([
    z.string().max(MAX_STRING),
    z.number().refine(Number.isFinite, "must be a finite number"),
    z.boolean(),
    z.array(z.string().max(MAX_STRING)).max(MAX_LIST),
  ])
  .openapi({}, { unionPreferredType: "oneOf" });

export const MetadataSchema = z
  .record(z.string(), z.unknown())
  .superRefine((record, ctx) => {
    const keys = Object.keys(record);
    if (keys.length > MAX_METADATA_KEYS) {
      ctx.addIssue({
        code: "custom",
        message: `At most ${MAX_METADATA_KEYS} keys; ${keys.length} given`,
      });
    }
    for (const key of keys) {
      if (!KEY.test(key)) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `Key \`${key.slice(0, 80)}\`: a letter, then up to 63 letters, digits, \`_\`, \`.\` or \`-\``,
        });
      } else if ((BUILT_IN_KEYS as readonly string[]).includes(key)) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `Key \`${key}\` is a built-in field filters match already; name the attribute otherwise`,
        });
      } else if (!value.safeParse(record[key]).success) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `Key \`${key}\`: a string (at most ${MAX_STRING} characters), a finite number, a boolean or a list of at most ${MAX_LIST} such strings`,
        });
      }
    }
  })
  .transform((record) => record as Metadata)
  .openapi({
    type: "object",
    additionalProperties: {
      oneOf: [
        { type: "string" },
        { type: "number" },
        { type: "boolean" },
        { type: "array", items: { type: "string" } },
      ],
    },
    description: `Attributes search can filter by (\`filters\`): up to ${MAX_METADATA_KEYS} keys (a letter, then letters, digits, \`_\`, \`.\`, \`-\`; not a built-in field's name), each a string, a number, a boolean or a list of strings`,
    example: { team: "sales", year: 2025, public: true, tags: ["pricing", "emea"] },
  });

/** How a source's text is cut into chunks; absent fields take the service's defaults. */
export interface ChunkingSettings {
  size?: number;
  overlap?: number;
  /** False: headings do not start a new chunk (they still name the chunks under them). */
  by_headings?: boolean;
}

export const MIN_CHUNK_SIZE = 200;
export const MAX_CHUNK_SIZE = 4000;

export const ChunkingSchema = z
  .strictObject({
    size: z.number().int().min(MIN_CHUNK_SIZE).max(MAX_CHUNK_SIZE).optional().openapi({
      description: "Target characters per chunk",
    }),
    overlap: z
      .number()
      .int()
      .min(0)
      .max(MAX_CHUNK_SIZE / 2 - 1)
      .optional()
      .openapi({
        description:
          "Characters of whole sentences a chunk repeats from the one before; less than half of `size` (a larger one is cut to fit)",
      }),
    by_headings: z.boolean().optional().openapi({
      description: "Whether a heading starts a new chunk (true by default)",
    }),
  })
  .refine((c) => c.size === undefined || c.overlap === undefined || c.overlap * 2 < c.size, {
    message: "overlap must be less than half of size",
    path: ["overlap"],
  })
  .openapi("Chunking", {
    description: `How this source's text is cut into chunks (stored, used by every reindex); absent fields take the service's defaults (CHUNK_SIZE, CHUNK_OVERLAP). \`size\` from ${MIN_CHUNK_SIZE} to ${MAX_CHUNK_SIZE}`,
  });

/** A source's chunking with the service's defaults filled in, checked as a whole. */
export function chunkingOf(
  settings: ChunkingSettings | null | undefined,
  defaults: { size: number; overlap: number },
): { size: number; overlap: number; byHeadings: boolean } {
  const size = settings?.size ?? defaults.size;
  // An overlap is always less than half the size: a size given alone, below twice the default
  // overlap, takes the largest overlap that fits rather than failing.
  const overlap = Math.min(settings?.overlap ?? defaults.overlap, Math.floor((size - 1) / 2));
  return { size, overlap, byHeadings: settings?.by_headings ?? true };
}

/**
 * The two as fields of a multipart form or a presigned upload's form: JSON in a text field,
 * parsed and checked like the JSON body's.
 */
export const jsonField = <T extends z.ZodType>(schema: T, name: string) =>
  z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: `\`${name}\` is not valid JSON` });
        return z.NEVER;
      }
    })
    .pipe(schema)
    .openapi({ type: "string", description: `JSON: see \`${name}\` of the JSON body` });
