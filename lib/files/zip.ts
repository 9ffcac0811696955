import { fromBufferPromise, type ZipFile } from "yauzl";
import { ParseError } from "./errors.js";
import { megabytes, type ParseLimits } from "./limits.js";

type ZipLimits = Pick<ParseLimits, "maxZipEntries" | "maxUnzippedBytes">;

async function open(bytes: Uint8Array): Promise<ZipFile> {
  try {
    return await fromBufferPromise(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), {
      lazyEntries: true,
      validateEntrySizes: true,
    });
  } catch (err) {
    throw new ParseError("corrupt", `The file is not a readable ZIP container (${message(err)})`);
  }
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * The entry names of a ZIP container, read from its central directory only: a zip bomb is
 * refused here by its entry count and declared sizes before anything is inflated.
 */
export async function zipEntryNames(bytes: Uint8Array, limits: ZipLimits): Promise<string[]> {
  const zip = await open(bytes);
  if (zip.entryCount > limits.maxZipEntries) {
    throw new ParseError(
      "too_large",
      `The document holds ${zip.entryCount} parts; at most ${limits.maxZipEntries} are accepted`,
    );
  }
  const names: string[] = [];
  let declared = 0;
  try {
    for await (const entry of zip.eachEntry()) {
      declared += entry.uncompressedSize;
      if (declared > limits.maxUnzippedBytes) {
        throw new ParseError(
          "too_large",
          `The document expands to more than ${megabytes(limits.maxUnzippedBytes)} when unpacked`,
        );
      }
      names.push(entry.fileName);
    }
  } catch (err) {
    if (err instanceof ParseError) throw err;
    throw new ParseError("corrupt", `The ZIP container is damaged (${message(err)})`);
  }
  return names;
}

/**
 * Inflates every entry without keeping it, counting bytes: an entry that expands beyond its
 * declared size (a lying zip bomb) fails here, in the parser's thread, before the document
 * library allocates anything for it.
 */
export async function verifyZip(bytes: Uint8Array, limits: ZipLimits): Promise<void> {
  const zip = await open(bytes);
  let total = 0;
  try {
    for await (const entry of zip.eachEntry()) {
      const stream = await zip.openReadStreamPromise(entry);
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        total += chunk.length;
        if (total > limits.maxUnzippedBytes) {
          stream.destroy();
          throw new ParseError(
            "too_large",
            `The document expands to more than ${megabytes(limits.maxUnzippedBytes)} when unpacked`,
          );
        }
      }
    }
  } catch (err) {
    if (err instanceof ParseError) throw err;
    const text = message(err);
    if (/too many bytes/i.test(text)) {
      throw new ParseError(
        "too_large",
        "A part of the document expands beyond its declared size (a zip bomb?)",
      );
    }
    throw new ParseError("corrupt", `The document's ZIP container is damaged (${text})`);
  }
}
