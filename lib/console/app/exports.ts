import { objectUrl } from "./api.js";
import type { IntelEvent } from "./api-types.js";
import { changeInNumbers } from "./competitors/change.js";
import { exportName } from "./export-name.js";
import { kindWord, sectionWord, severityWord } from "./words.js";

/**
 * What leaves the console as a file: the events feed as CSV, built in the browser from what the
 * API answered; artifacts and battlecards, as Markdown or DOCX, as the export routes write them
 * (a DOCX writer would triple the script; see the README). All are saved through a `blob:` link.
 */

/** Saves an object URL as a file the browser downloads, then lets the URL go. */
function save(filename: string, url: string): void {
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  a.click();
  // Revoked after the click has been handled: the download has its own copy by then.
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

/** Saves text as a file the browser downloads. */
export const download = (filename: string, text: string, type: string) =>
  save(filename, URL.createObjectURL(new Blob([text], { type })));

/**
 * Saves what an export route answers: fetched with the key (a link's own request could not carry
 * it), named as the route names it.
 */
export const downloadExport = async (path: string, title: string, format: "md" | "docx") =>
  save(exportName(title, format), await objectUrl(`${path}?format=${format}`));

/** One CSV cell (RFC 4180), with formula-starting text defused for spreadsheets. */
const cell = (value: string) => {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
};

export function eventsCsv(events: IntelEvent[]): string {
  const head = [
    "Detected",
    "Company",
    "Area",
    "Change",
    "Severity",
    "What changed",
    "Summary",
    "Page",
    "Read",
    "Actioned",
  ];
  const rows = events.map((e) => [
    e.detectedAt,
    e.competitorDomain,
    sectionWord(e.type),
    kindWord(e.change.kind),
    severityWord(e.severity),
    changeInNumbers(e.change),
    e.aiBrief,
    e.change.url ?? "",
    e.isRead ? "Yes" : "No",
    e.isActioned ? "Yes" : "No",
  ]);
  return `${[head, ...rows].map((row) => row.map(cell).join(",")).join("\r\n")}\r\n`;
}
