import { randomUUID } from "node:crypto";

/**
 * A MIME message (RFC 5322, RFC 2045-2047): a text and an HTML alternative of one content. Every
 * header value is folded to one line first, whatever it came from: a carriage return or line
 * feed in a competitor's name or an endpoint's label can never start a header of its own
 * (`Bcc:`) or end the headers early. Non-ASCII values travel as encoded words, bodies as base64,
 * so no line of the message comes from data unencoded.
 */
export interface MailContent {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  date: Date;
}

/** A header value on one line: control characters (CR and LF among them) become spaces. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are the point.
export const oneLine = (value: string) => value.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();

/** RFC 2047 encoded words for a value with non-ASCII characters, in pieces a line can hold. */
function encodedWords(value: string): string {
  if (/^[\u0020-\u007e]*$/.test(value)) return value;
  const words: string[] = [];
  let piece = "";
  for (const char of value) {
    if (Buffer.byteLength(piece + char, "utf8") > 45) {
      words.push(piece);
      piece = "";
    }
    piece += char;
  }
  if (piece) words.push(piece);
  return words.map((w) => `=?UTF-8?B?${Buffer.from(w, "utf8").toString("base64")}?=`).join("\r\n ");
}

const base64Lines = (text: string) =>
  (
    Buffer.from(text, "utf8")
      .toString("base64")
      .match(/.{1,76}/g) ?? []
  ).join("\r\n");

/** RFC 5322's date: `Fri, 27 Nov 2026 07:00:00 +0000`. */
const mailDate = (date: Date) => date.toUTCString().replace("GMT", "+0000");

/** The message as sent: CRLF line ends, a boundary no base64 body can contain (`=` and `_`). */
export function mimeMessage(content: MailContent): string {
  const boundary = `=_digest_${randomUUID().replaceAll("-", "")}`;
  const domain = content.from.split("@")[1] ?? "localhost";
  const headers = [
    ["From", oneLine(content.from)],
    ["To", content.to.map(oneLine).join(", ")],
    ["Subject", encodedWords(oneLine(content.subject))],
    ["Date", mailDate(content.date)],
    ["Message-ID", `<${randomUUID()}@${oneLine(domain)}>`],
    ["MIME-Version", "1.0"],
    ["Content-Type", `multipart/alternative; boundary="${boundary}"`],
  ];
  const part = (type: string, body: string) =>
    [
      `--${boundary}`,
      `Content-Type: ${type}; charset=UTF-8`,
      "Content-Transfer-Encoding: base64",
      "",
      base64Lines(body),
    ].join("\r\n");
  return [
    ...headers.map(([name, value]) => `${name}: ${value}`),
    "",
    part("text/plain", content.text),
    part("text/html", content.html),
    `--${boundary}--`,
    "",
  ].join("\r\n");
}
