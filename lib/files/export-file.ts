import { z } from "@hono/zod-openapi";
import { exportName } from "../console/app/export-name.js";
import { markdownToDocx } from "./markdown-docx.js";

const DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

/**
 * An export route's query: the format, Markdown or Word's (which Google Docs and Pages open);
 * Markdown when none is named.
 */
export const ExportQuery = z.strictObject({
  format: z
    .enum(["md", "docx"])
    .default("md")
    .openapi({ description: "`md` (Markdown, the default) or `docx` (Word)" }),
});

/** An export route's answer, as the reference documents it. */
export const exportAnswer = {
  description: "The document, as an attachment named after its title",
  content: {
    "text/markdown": { schema: z.string() },
    [DOCX_TYPE]: { schema: z.string().openapi({ format: "binary" }) },
  },
};

/**
 * An export route's answer: the Markdown as it is, or written as DOCX, as an attachment named
 * after the title. (`exportName`).
 */
export async function exportFile(
  title: string,
  markdown: string,
  format: z.infer<typeof ExportQuery>["format"],
): Promise<{ body: string | Uint8Array<ArrayBuffer>; headers: Record<string, string> }> {
  const docx = format === "docx";
  return {
    body: docx ? new Uint8Array(await markdownToDocx(markdown)) : markdown,
    headers: {
      "content-type": docx ? DOCX_TYPE : "text/markdown; charset=utf-8",
      "content-disposition": `attachment; filename="${exportName(title, format)}"`,
      "cache-control": "private, no-store",
    },
  };
}
