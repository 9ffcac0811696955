import { humanize } from "../../console/app/dom.js";

/**
 * Structured output as Markdown: keys become headings, lists bullets, `true` "Yes". The export
 * route writes an artifact with it (`GET /api/artifacts/{id}/export`), and the console downloads
 * that answer, so there is one writer. `humanize` is the console's own (a pure function in a
 * module that touches no browser global when loaded), so a key reads the same on screen and in
 * the file.
 */
export function toMarkdown(value: unknown, depth = 2): string {
  if (value === null || value === undefined) return "";
  if (typeof value !== "object")
    return `${typeof value === "boolean" ? (value ? "Yes" : "No") : value}\n`;
  if (Array.isArray(value)) {
    return `${value
      .map((item) =>
        item !== null && typeof item === "object"
          ? toMarkdown(item, depth + 1)
          : `- ${toMarkdown(item, depth).trim()}`,
      )
      .join("\n")}\n`;
  }
  return Object.entries(value)
    .filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) =>
      typeof v === "object"
        ? `${"#".repeat(Math.min(depth, 6))} ${humanize(k)}\n\n${toMarkdown(v, depth + 1)}`
        : `**${humanize(k)}:** ${toMarkdown(v, depth).trim()}\n`,
    )
    .join("\n");
}

/** A saved artifact as one Markdown document: its title, then its output. */
export const artifactMarkdown = (artifact: { title: string; output: unknown }) =>
  `# ${artifact.title}\n\n${toMarkdown(artifact.output)}`;
