import { logger } from "../../lib/log.js";

type Line = Record<string, unknown>;

/**
 * The logger's JSON lines, as Powertools writes them (INFO on stdout, WARN and above on stderr),
 * written while `work` runs; other output passes through. The level is INFO meanwhile and SILENT
 * again after, as the suite runs (vitest.config.ts).
 */
export async function loggedWhile(work: () => Promise<unknown>): Promise<Line[]> {
  const lines: Line[] = [];
  const original = {
    out: process.stdout.write.bind(process.stdout),
    err: process.stderr.write.bind(process.stderr),
  };
  const capture =
    (through: (...args: unknown[]) => boolean) =>
    (chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = String(chunk);
      if (!text.startsWith("{")) return through(chunk, ...rest);
      for (const line of text.split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Line);
      return true;
    };
  process.stdout.write = capture(original.out as never) as typeof process.stdout.write;
  process.stderr.write = capture(original.err as never) as typeof process.stderr.write;
  logger.setLogLevel("INFO");
  try {
    await work();
  } finally {
    logger.setLogLevel("SILENT");
    process.stdout.write = original.out;
    process.stderr.write = original.err;
  }
  return lines;
}
