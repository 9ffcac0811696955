/** Why a file could not be turned into text; stable strings, stored as the source's `error_code`. */
export type ParseErrorCode =
  | "unsupported_type"
  | "type_mismatch"
  | "empty"
  | "encrypted"
  | "no_text_layer"
  | "corrupt"
  | "too_large"
  | "too_complex"
  | "timeout";

/** A file that parsing cannot handle, now or on a retry: its source fails with this code and message. */
export class ParseError extends Error {
  constructor(
    readonly code: ParseErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ParseError";
  }
}
