import { parse } from "csv-parse/sync";
import { ParseError } from "./errors.js";
import type { ParseLimits } from "./limits.js";
import { formatTable } from "./records.js";

const DELIMITERS = [",", ";", "\t", "|"] as const;

/** The delimiter used most on the first line, quoted values aside (`,` when none is). */
export function guessDelimiter(text: string): string {
  const firstLine = (text.split("\n", 1)[0] ?? "").replace(/"[^"]*"/g, "");
  let best: string = ",";
  let bestCount = 0;
  for (const delimiter of DELIMITERS) {
    const count = firstLine.split(delimiter).length - 1;
    if (count > bestCount) {
      best = delimiter;
      bestCount = count;
    }
  }
  return best;
}

/** A CSV as one readable record per row (see records.ts), refusing more than `maxRows` rows. */
export function csvText(text: string, limits: Pick<ParseLimits, "maxRows">): string {
  let rows: string[][];
  try {
    rows = parse(text, {
      delimiter: guessDelimiter(text),
      bom: true,
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: true,
      // The header and one row past the limit are enough to tell the file is too long.
      to: limits.maxRows + 2,
    }) as string[][];
  } catch (err) {
    throw new ParseError(
      "corrupt",
      `The CSV cannot be read (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  if (rows.length > limits.maxRows + 1) {
    throw new ParseError("too_large", `The CSV has more than ${limits.maxRows} rows`);
  }
  return formatTable(rows).join("\n\n");
}
