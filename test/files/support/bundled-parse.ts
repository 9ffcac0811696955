import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { parseFile } from "../../../lib/files/parse.js";
import { extractPage } from "../../../lib/web/extract.js";

/**
 * Entry point of the bundle built by bundle.test.ts: parses the files named on the command line
 * (reads `.html` ones as web pages) as a bundled Lambda would, and prints each outcome as one
 * JSON array.
 */
const read = (path: string, bytes: Buffer) =>
  path.endsWith(".html")
    ? extractPage(bytes, "https://example.com/")
    : parseFile({ filename: basename(path), bytes });
const results = [];
for (const path of process.argv.slice(2)) {
  results.push(
    await read(path, await readFile(path)).catch((err: { code?: string; message?: string }) => ({
      code: err.code,
      message: err.message,
    })),
  );
}
process.stdout.write(JSON.stringify(results));
