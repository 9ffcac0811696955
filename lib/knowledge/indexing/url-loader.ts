import type { Blobs } from "../../store/blobs.js";
import { type ContentKind, decodeText } from "../../web/content-type.js";
import { FetchError, isTransient } from "../../web/errors.js";
import { extractPage } from "../../web/extract.js";
import type { FetchedContent, SafeFetcher } from "../../web/fetch.js";
import { ExtractionError, type ExtractLimits } from "../../web/page.js";
import type { Renderer } from "../../web/render/renderer.js";
import { viewPage } from "../../web/render/view.js";
import type { SourceItem } from "../sources/sources.js";
import {
  type ContentLoader,
  IndexingError,
  type LoadedContent,
  type PageRefresher,
  RetryableError,
} from "./indexer.js";

/** What a URL source can be read from until the document parsers take PDF, DOCX and CSV too. */
const URL_SOURCE_KINDS: readonly ContentKind[] = ["html", "xhtml", "text", "markdown"];

/** Statuses that say a page is gone for good: a refresh marks its source, never deletes it. */
const GONE_STATUSES = new Set([404, 410]);

export interface UrlLoaderDeps {
  fetcher: SafeFetcher;
  blobs: Blobs;
  limits?: Partial<ExtractLimits>;
  /** Renders pages that need scripts (the source's `render`); absent, they fail `needs_browser`. */
  renderer?: Renderer | undefined;
}

/**
 * A fetch or extraction failure as the source's failure: a busy or broken site (429, 5xx, a
 * timeout, a dropped connection) is retried by the queue, anything else fails the source at once
 * with the fetcher's or the parser's own code and message.
 */
function loadFailure(err: unknown, url: string): unknown {
  if (isTransient(err)) return new RetryableError(err.code, err.message);
  if (err instanceof FetchError) return new IndexingError(err.code, err.message);
  if (err instanceof ExtractionError) return new IndexingError(err.code, `${url}: ${err.message}`);
  return err;
}

async function readFetched(
  page: FetchedContent,
  source: SourceItem,
  { limits, renderer }: UrlLoaderDeps,
): Promise<LoadedContent> {
  const validators = page.validators;
  if (page.kind !== "html" && page.kind !== "xhtml") {
    return { text: decodeText(page.body, page.charset), validators };
  }
  const view = await viewPage(page, { mode: source.render ?? "auto", renderer });
  const extracted = await extractPage(view.body, view.url, { charset: view.charset, limits });
  return { text: extracted.markdown, validators };
}

/** The page as a crawl read it for this revision (`Sources.reindex`), when it left a copy. */
async function crawlCopy(blobs: Blobs, source: SourceItem): Promise<string | undefined> {
  return source.refresh_snapshot ? blobs.getText(source.refresh_snapshot) : undefined;
}

const urlOf = (source: SourceItem) => {
  const url = source.source_url_or_path;
  if (!url) throw new IndexingError("invalid_url", "The source has no URL to fetch");
  return url;
};

/**
 * Loads a `url` source: fetches its page with the safe fetcher and extracts the readable content
 * as Markdown. A crawl has just fetched its pages, so it stores each page's Markdown as the
 * content of a revision (`content_key`, `snapshot_revision`, or for a page the workspace had
 * already `refresh_snapshot`) and that is read instead of fetching again; every other revision
 * fetches the live page.
 */
export function urlLoader(deps: UrlLoaderDeps): ContentLoader {
  const { fetcher, blobs } = deps;
  return async (source) => {
    const copy = await crawlCopy(blobs, source);
    if (copy !== undefined) return { text: copy };
    const snapshotRevision = source.snapshot_revision ?? 1;
    if (source.content_key && source.revision === snapshotRevision) {
      const snapshot = await blobs.getText(source.content_key);
      if (snapshot !== undefined) return { text: snapshot };
    }
    const url = urlOf(source);
    try {
      return await readFetched(
        await fetcher.fetch(url, { accept: URL_SOURCE_KINDS }),
        source,
        deps,
      );
    } catch (err) {
      throw loadFailure(err, url);
    }
  };
}

/**
 * Reads an indexed URL source's page again to see whether it changed: a crawl's fresh copy when
 * it left one, else the live page with a conditional request (its `ETag` and `Last-Modified`), so
 * an unchanged page costs the site a 304. A page answering 404 or 410 is gone.
 */
export function urlRefresher(deps: UrlLoaderDeps): PageRefresher {
  const { fetcher, blobs } = deps;
  return async (source) => {
    const copy = await crawlCopy(blobs, source);
    if (copy !== undefined) return { kind: "content", text: copy };
    const url = urlOf(source);
    const validators = {
      etag: source.etag ?? undefined,
      lastModified: source.last_modified ?? undefined,
    };
    try {
      const page = await fetcher.fetch(url, { accept: URL_SOURCE_KINDS, validators });
      if (page.type === "not_modified") return { kind: "unchanged" };
      return { kind: "content", ...(await readFetched(page, source, deps)) };
    } catch (err) {
      if (err instanceof FetchError && GONE_STATUSES.has(err.status ?? 0)) {
        return { kind: "gone", message: err.message };
      }
      throw loadFailure(err, url);
    }
  };
}
