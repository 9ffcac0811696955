/**
 * Tabular data as readable records, one per paragraph: `Name: Ada; Role: CTO`. A record reads
 * well in a search result and in a prompt, and the chunker never splits one across chunks.
 */

const clean = (cell: string) => cell.replace(/\s+/g, " ").trim();

const NUMERIC = /^[-+]?[\d\s.,%$€£¥]+$/;

/**
 * Whether a first row names the columns: every cell is non-empty, distinct and not a number
 * (data rows usually hold numbers or repeat values somewhere; header rows do not).
 */
export function looksLikeHeader(row: string[]): boolean {
  const cells = row.map(clean);
  const distinct = new Set(cells.map((c) => c.toLowerCase()));
  return (
    cells.length > 0 &&
    cells.every((c) => c !== "" && !NUMERIC.test(c) && c.length <= 100) &&
    distinct.size === cells.length
  );
}

/** One row as `Column: value; ...`, leaving out empty cells; a column without a name is numbered. */
function formatRecord(header: string[], row: string[]): string {
  return row
    .map((cell, i) => [clean(header[i] ?? "") || `Column ${i + 1}`, clean(cell)] as const)
    .filter(([, value]) => value !== "")
    .map(([name, value]) => `${name}: ${value}`)
    .join("; ");
}

const formatCells = (row: string[]) => row.map(clean).filter(Boolean).join(" | ");

/** Rows as records when the first row names the columns, otherwise as cells joined with ` | `. */
export function formatTable(rows: string[][]): string[] {
  const [first, ...rest] = rows;
  if (!first) return [];
  const lines =
    rest.length > 0 && looksLikeHeader(first)
      ? rest.map((row) => formatRecord(first, row))
      : rows.map(formatCells);
  return lines.filter(Boolean);
}
