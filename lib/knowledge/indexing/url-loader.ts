import type { Blobs } from "../../store/blobs.js";
import { type ContentKind, decodeText } from "../../web/content-type.js";
import { FetchError } from "../../web/errors.js";
import { extractPage } from "../../web/extract.js";
import type { SafeFetcher } from "../../web/fetch.js";
import { ExtractionError, type ExtractLimits } from "../../web/page.js";
import { type ContentLoader, IndexingError } from "./indexer.js";

/** What a URL source can be read from until the document parsers take PDF, DOCX and CSV too. */
const URL_SOURCE_KINDS: readonly ContentKind[] = ["html", "xhtml", "text", "markdown"];

export interface UrlLoaderDeps {
  fetcher: SafeFetcher;
  blobs: Blobs;
  limits?: Partial<ExtractLimits>;
}

/**
 * Loads a `url` source: fetches its page with the safe fetcher and extracts the readable content
 * as Markdown. A crawl has just fetched its pages, so it stores each page's Markdown as the first
 * revision's content (`content_key`) and that is read instead of fetching again; every reindex
 * fetches the live page. Fetch and extraction failures fail the source with their own code.
 */
export function urlLoader({ fetcher, blobs, limits }: UrlLoaderDeps): ContentLoader {
  return async (source) => {
    if (source.content_key && source.revision === 1) {
      const snapshot = await blobs.getText(source.content_key);
      if (snapshot !== undefined) return { text: snapshot };
    }
    const url = source.source_url_or_path;
    if (!url) throw new IndexingError("invalid_url", "The source has no URL to fetch");
    try {
      const page = await fetcher.fetch(url, { accept: URL_SOURCE_KINDS });
      if (page.kind !== "html" && page.kind !== "xhtml") {
        return { text: decodeText(page.body, page.charset) };
      }
      const extracted = await extractPage(page.body, page.url, { charset: page.charset, limits });
      return { text: extracted.markdown };
    } catch (err) {
      if (err instanceof FetchError) throw new IndexingError(err.code, err.message);
      if (err instanceof ExtractionError) {
        throw new IndexingError(err.code, `${url}: ${err.message}`);
      }
      throw err;
    }
  };
}
