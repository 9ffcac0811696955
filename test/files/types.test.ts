import { describe, expect, it } from "vitest";
import {
  ACCEPTED_CONTENT_TYPES,
  ACCEPTED_EXTENSIONS,
  declaredType,
  extensionOf,
  mediaType,
} from "../../lib/files/types.js";

describe("declared file types", () => {
  it("lists what the API accepts", () => {
    expect(ACCEPTED_EXTENSIONS).toEqual(
      expect.arrayContaining([".pdf", ".docx", ".html", ".htm", ".md", ".txt", ".csv"]),
    );
    expect(ACCEPTED_CONTENT_TYPES).toEqual(
      expect.arrayContaining(["application/pdf", "text/markdown", "text/csv", "text/html"]),
    );
  });

  it("reads media types and extensions loosely", () => {
    expect(mediaType("Text/CSV; charset=utf-8")).toBe("text/csv");
    expect(mediaType(undefined)).toBe("");
    expect(extensionOf("C:\\docs\\Report.Final.PDF")).toBe(".pdf");
    expect(extensionOf(".bashrc")).toBe("");
  });

  it("takes the content type when it is specific and the extension agrees", () => {
    expect(declaredType("report.pdf", "application/pdf")).toEqual({
      ok: true,
      kind: "pdf",
      contentType: "application/pdf",
    });
    expect(declaredType("notes", "text/markdown")).toMatchObject({ ok: true, kind: "markdown" });
  });

  it("lets the extension decide when the content type says nothing", () => {
    expect(declaredType("deck.docx", "application/octet-stream")).toMatchObject({
      ok: true,
      kind: "docx",
      contentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    });
    expect(declaredType("data.csv", undefined)).toMatchObject({ ok: true, kind: "csv" });
  });

  it("reads text/plain as any text kind the extension names", () => {
    expect(declaredType("README.md", "text/plain")).toMatchObject({ kind: "markdown" });
    expect(declaredType("people.csv", "text/plain")).toMatchObject({ kind: "csv" });
  });

  it("refuses unknown types and extensions", () => {
    expect(declaredType("photo.png", "image/png")).toMatchObject({
      ok: false,
      reason: "unsupported",
    });
    expect(declaredType("archive.zip", "")).toMatchObject({ ok: false, reason: "unsupported" });
    expect(declaredType("noextension", null)).toMatchObject({ ok: false, reason: "unsupported" });
  });

  it("calls a content type that contradicts the extension a conflict", () => {
    expect(declaredType("report.docx", "application/pdf")).toMatchObject({
      ok: false,
      reason: "conflict",
    });
    expect(declaredType("report.pdf", "text/plain")).toMatchObject({
      ok: false,
      reason: "conflict",
    });
  });
});
