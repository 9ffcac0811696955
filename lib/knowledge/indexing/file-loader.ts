import { limiter } from "../../async.js";
import { ParseError } from "../../files/errors.js";
import { DEFAULT_PARSE_LIMITS, megabytes } from "../../files/limits.js";
import { type ParseOptions, parseFile } from "../../files/parse.js";
import { sandbox, THREAD_OVERHEAD_MB } from "../../files/sandbox.js";
import type { Blobs } from "../../store/blobs.js";
import { extractPage } from "../../web/extract.js";
import { ExtractionError } from "../../web/page.js";
import type { SourceItem } from "../sources/sources.js";
import { type ContentLoader, IndexingError } from "./indexer.js";

/** HTML files go through the same extractor as web pages; its refusals become parse errors. */
async function extractHtml(html: string): Promise<{ text: string }> {
  try {
    return { text: (await extractPage(html, "https://upload.invalid/")).markdown };
  } catch (err) {
    if (!(err instanceof ExtractionError)) throw err;
    // A file that is only a consent banner has nothing to index, as an empty one.
    const empty = err.code === "empty_content" || err.code === "blocked";
    throw new ParseError(empty ? "empty" : err.code, err.message);
  }
}

const changed = () =>
  new IndexingError(
    "upload_changed",
    "The stored file is not the one accepted when it was uploaded; upload the file again",
  );

const busy = () =>
  new Error("The worker holds as many files as its memory allows; the file is retried later");

/**
 * Reads a file source's stored object and parses it (lib/files/parse.ts). A file that cannot be
 * parsed fails its source with the parser's code and message; an object larger than the parse
 * limit is refused from its stored length, before it is downloaded. A file accepted from a
 * presigned upload is read as accepted or not at all: asked for by its ETag (and version), and
 * its ETag and size checked again, since S3-compatible emulators ignore the condition.
 *
 * Files are held in memory (up to 50 MB each) from download to parsed text, and a process parses
 * only as many at once as its sandbox budget fits parse threads (one in a 1,024 MB function), so
 * it holds one file per such thread plus the next in line: five at once took the index worker to
 * 900 MB. A file that waits for its turn longer than a parse may take fails as busy and is retried.
 */
export function fileLoader(blobs: Blobs, parseOptions: ParseOptions = {}): ContentLoader {
  const options = { extractHtml, handOver: true, ...parseOptions };
  const limits = { ...DEFAULT_PARSE_LIMITS, ...options.limits };
  const { maxBytes } = limits;
  const threads = Math.floor(
    (options.sandbox ?? sandbox).budget.capacityMb / (limits.maxHeapMb + THREAD_OVERHEAD_MB),
  );
  const inHand = limiter(Math.max(1, threads) + 1);
  const maxWait = { ms: limits.timeoutMs, busy };
  return (source) => inHand(() => load(source), maxWait);

  async function load(source: SourceItem) {
    const accepted = source.accepted_file;
    const object = source.content_key ? await blobs.open(source.content_key, accepted) : "missing";
    if (object === "changed") throw changed();
    if (object === "missing") {
      throw new IndexingError("content_missing", "The uploaded file is missing");
    }
    if (accepted && (object.etag !== accepted.etag || object.bytes !== accepted.bytes)) {
      await object.discard();
      throw changed();
    }
    if (object.bytes > maxBytes) {
      await object.discard();
      throw new IndexingError(
        "too_large",
        `The file has ${megabytes(object.bytes)}; files over ${megabytes(maxBytes)} are not parsed`,
      );
    }
    const input = {
      bytes: await object.read(),
      filename: source.source_url_or_path ?? source.name,
      contentType: object.contentType,
    };
    try {
      return { text: (await parseFile(input, options)).text };
    } catch (err) {
      if (err instanceof ParseError) throw new IndexingError(err.code, err.message);
      throw err;
    }
  }
}
