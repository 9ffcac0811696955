import { describe, expect, it } from "vitest";
import { markupShape } from "../../lib/web/markup.js";

const depth = (html: string) => markupShape(html).depth;

describe("markupShape", () => {
  it("follows the nesting of elements and counts start tags", () => {
    expect(
      markupShape("<html><body><div><span>a</span><span>b</span></div></body></html>"),
    ).toEqual({ elements: 5, depth: 2 });
    expect(depth(`${"<div>".repeat(300)}text`)).toBe(300);
    expect(depth(`${"<DIV class=x>".repeat(40)}${"</div>".repeat(40)}<section></section>`)).toBe(
      40,
    );
  });

  it("lets void elements and those whose end tag may be omitted not nest", () => {
    expect(depth("<ul><li>one<li>two<li>three</ul>")).toBe(1);
    expect(depth(`<div>${"<p>para".repeat(500)}</div>`)).toBe(1);
    expect(depth(`<table>${"<tr><td>cell".repeat(200)}</table>`)).toBe(1);
    expect(depth(`<div>${"<br><img src=x><input>".repeat(200)}</div>`)).toBe(1);
    expect(markupShape("<p>a<br>b<img src=x></p>").elements).toBe(3);
  });

  it("closes everything opened inside an element with its end tag, and ignores stray end tags", () => {
    expect(depth("<div><section><span><b>x</div><div>y</div>")).toBe(4);
    expect(depth(`${"<div></span>".repeat(400)}`)).toBe(400);
    expect(depth(`${"<div></>".repeat(10)}`)).toBe(10);
  });

  it("skips comments, doctypes, script and style contents and attribute values", () => {
    const hidden = [
      "<!doctype html>",
      `<!-- ${"<div>".repeat(500)} -->`,
      `<script>const s = "${"<div>".repeat(500)}"; if (a </scriptx> b) {}</script>`,
      `<style>${"<div>".repeat(500)}</style>`,
      `<textarea>${"<div>".repeat(500)}</textarea>`,
      `<div title="${"<div>".repeat(500)}" data-x='<div>'>x</div>`,
    ].join("");
    expect(markupShape(hidden)).toEqual({ elements: 4, depth: 1 });
  });

  it("closes self-closing tags inside SVG and MathML only, as HTML parsers do", () => {
    expect(depth(`<svg>${'<path d="M0 0"/>'.repeat(300)}</svg>`)).toBe(1);
    expect(depth(`<math>${"<mi/>".repeat(300)}</math>`)).toBe(1);
    expect(depth(`${"<div/>".repeat(300)}`)).toBe(300);
  });

  it("reads bytes of an ASCII-compatible encoding as it reads text", () => {
    const html = `<p>caf\xe9</p>${"<section>".repeat(20)}`;
    expect(markupShape(Buffer.from(html, "latin1"))).toEqual(markupShape(html));
    expect(markupShape(new TextEncoder().encode("<div>😀<div>ü</div></div>")).depth).toBe(2);
  });

  it("ends at a plaintext element, whose content is all text", () => {
    expect(markupShape(`<div><plaintext>${"<div>".repeat(500)}`)).toEqual({
      elements: 2,
      depth: 1,
    });
  });
});
