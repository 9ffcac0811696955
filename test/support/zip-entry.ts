import { fromBuffer } from "yauzl";

/** One entry of a zip, as text; the test fails when the bytes are not a zip or lack it. */
export const zipEntry = (bytes: Buffer, name: string) =>
  new Promise<string>((resolve, reject) =>
    fromBuffer(bytes, { lazyEntries: true }, (error, zip) => {
      if (error) return reject(error);
      zip.on("entry", (entry: { fileName: string }) => {
        if (entry.fileName !== name) return zip.readEntry();
        zip.openReadStream(entry as never, (failed, stream) => {
          if (failed) return reject(failed);
          const chunks: Buffer[] = [];
          stream.on("data", (chunk: Buffer) => chunks.push(chunk));
          stream.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        });
      });
      zip.on("end", () => reject(new Error(`no ${name} in the zip`)));
      zip.readEntry();
    }),
  );
