/**
 * An exported file's name, made of a title's letters and digits so it is the same in every
 * browser and system and needs no quoting. The console names the files it saves with it, and the
 * export routes (`lib/files/export-file.ts`) the files they answer, so both are named alike.
 */
export const exportName = (title: string, extension: string) =>
  `${
    title
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "") || "export"
  }.${extension}`;
