import { z } from "@hono/zod-openapi";
import { ErrorSchema } from "../http/schemas.js";

// The HTTP schemas intel's capabilities share: the answers of model calls, and the citation.

const error = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorSchema } },
});

/** The answers of routes that call the model, beside the common ones. */
export const modelErrors = {
  502: error(
    "`llm_error`: the model's answer was unusable (after one repair for structured answers)",
  ),
  503: error("`llm_unavailable`: no model is configured, or the provider is down or rate limiting"),
  504: error("`upstream_timeout`: the model did not answer within the time budget"),
} as const;

/** A citation as answers carry it: chat answers, intel modules' answers, saved artifacts. */
export const CitationSchema = z
  .strictObject({
    source_id: z.string(),
    source_url_or_path: z.string().nullable(),
    name: z.string(),
    quote: z.string().openapi({ description: "A sentence of the cited chunk, verbatim" }),
    // Optional: artifacts saved before citations had spans, and clients posting artifacts, omit them.
    char_start: z.number().int().nullable().optional().openapi({
      description:
        "Where the quoted sentence starts in the source's extracted text (`GET /api/knowledge/{id}/text`); null for sources indexed before spans were recorded",
    }),
    char_end: z.number().int().nullable().optional().openapi({
      description: "Where the quoted sentence ends (exclusive)",
    }),
    page: z.number().int().nullable().optional().openapi({ description: "Paged documents" }),
    heading_path: z.array(z.string()).optional().openapi({
      description: "The headings above the passage, outermost first",
    }),
    url: z.string().nullable().optional().openapi({
      description: "Web pages: the page's URL with a text fragment (`#:~:text=`) at the quote",
    }),
  })
  .openapi("Citation");
