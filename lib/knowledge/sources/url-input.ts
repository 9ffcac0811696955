import { invalid } from "../../errors.js";
import { FetchError } from "../../web/errors.js";
import { canonicalUrl, checkUrl } from "../../web/url.js";

/**
 * A URL from a request body, canonicalised. What can be refused without fetching it (scheme,
 * credentials, a literal private address) is `validation_failed` naming the field; the rest is checked again
 * on every connection by the safe fetcher.
 */
export function checkedUrl(input: string, field: string, allowPrivate: boolean): string {
  try {
    const url = checkUrl(input, { allowPrivate });
    return canonicalUrl(url) ?? url.href;
  } catch (err) {
    if (!(err instanceof FetchError)) throw err;
    throw invalid(err.message, { issues: [{ path: field, message: err.message }] });
  }
}
