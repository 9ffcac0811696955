import { describe, expect, it } from "vitest";
import { parseSitemap, readSitemaps } from "../../lib/web/sitemap.js";

const urlset = (urls: string[]) =>
  `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${urls.map((u) => `  <url><loc>${u}</loc><lastmod>2024-01-01</lastmod></url>`).join("\n")}
</urlset>`;

const index = (files: string[]) =>
  `<?xml version="1.0"?><sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">${files
    .map((f) => `<sm:sitemap><sm:loc> ${f} </sm:loc></sm:sitemap>`)
    .join("")}</sm:sitemapindex>`;

describe("parseSitemap", () => {
  it("reads url sets, with entities decoded and only web URLs kept", () => {
    expect(
      parseSitemap(urlset(["https://a.example/x?p=1&amp;q=2", "ftp://a.example/f", "not a url"])),
    ).toEqual({ urls: ["https://a.example/x?p=1&q=2"], sitemaps: [] });
    expect(parseSitemap(urlset(["https://a.example/only"])).urls).toEqual([
      "https://a.example/only",
    ]);
  });

  it("reads sitemap indexes, namespaced or not", () => {
    expect(parseSitemap(index(["https://a.example/s1.xml"]))).toEqual({
      urls: [],
      sitemaps: ["https://a.example/s1.xml"],
    });
  });

  it("reads text sitemaps and survives junk and entity bombs", () => {
    expect(parseSitemap("https://a.example/1\r\nhttps://a.example/2\nnope\n").urls).toEqual([
      "https://a.example/1",
      "https://a.example/2",
    ]);
    expect(parseSitemap("<urlset><url><loc>")).toEqual({ urls: [], sitemaps: [] });
    const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from(
      { length: 9 },
      (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? "" : i};`.repeat(10)}">`,
    ).join("")}]><urlset><url><loc>https://a.example/&lol9;</loc></url></urlset>`;
    expect(parseSitemap(laughs).urls.join("").length).toBeLessThan(200_000);
  });
});

describe("readSitemaps", () => {
  const files: Record<string, string> = {
    "https://a.example/index.xml": index([
      "https://a.example/s1.xml",
      "https://a.example/nested.xml",
    ]),
    "https://a.example/s1.xml": urlset(["https://a.example/1", "https://a.example/2"]),
    "https://a.example/nested.xml": index([
      "https://a.example/s2.xml",
      "https://a.example/index.xml",
    ]),
    "https://a.example/s2.xml": urlset(["https://a.example/3"]),
  };
  const load = async (url: string) => files[url];

  it("follows indexes breadth first, once per file", async () => {
    const loaded: string[] = [];
    const urls = await readSitemaps(
      ["https://a.example/index.xml", "https://a.example/gone.xml"],
      (u) => {
        loaded.push(u);
        return load(u);
      },
      { maxUrls: 100, maxFiles: 10, maxDepth: 3 },
    );
    expect(urls).toEqual(["https://a.example/1", "https://a.example/2", "https://a.example/3"]);
    expect(loaded.filter((u) => u.endsWith("index.xml"))).toHaveLength(1);
  });

  it("stops at the nesting, file and entry bounds", async () => {
    const start = ["https://a.example/index.xml"];
    expect(await readSitemaps(start, load, { maxUrls: 100, maxFiles: 10, maxDepth: 2 })).toEqual([
      "https://a.example/1",
      "https://a.example/2",
    ]);
    expect(await readSitemaps(start, load, { maxUrls: 100, maxFiles: 2, maxDepth: 3 })).toEqual([
      "https://a.example/1",
      "https://a.example/2",
    ]);
    expect(await readSitemaps(start, load, { maxUrls: 1, maxFiles: 10, maxDepth: 3 })).toEqual([
      "https://a.example/1",
    ]);
  });
});
