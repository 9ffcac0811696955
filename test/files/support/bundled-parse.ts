import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { parseFile } from "../../../lib/files/parse.js";

/**
 * Entry point of the bundle built by bundle.test.ts: parses the files named on the command line
 * as a bundled Lambda would, and prints each outcome as one JSON array.
 */
const results = [];
for (const path of process.argv.slice(2)) {
  const input = { filename: basename(path), bytes: await readFile(path) };
  results.push(
    await parseFile(input).catch((err: { code?: string; message?: string }) => ({
      code: err.code,
      message: err.message,
    })),
  );
}
process.stdout.write(JSON.stringify(results));
