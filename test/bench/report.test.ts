import { describe, expect, it } from "vitest";
import { type FigureReport, merge, type Report, renderMarkdown } from "../../bench/core/report.js";

const figure = (number: number, id: string, seconds: number): FigureReport => ({
  number,
  id,
  title: `Figure ${id}`,
  description: `What ${id} measures.`,
  seconds,
  tables: [],
  notes: [],
});

const report = (startedAt: string, figures: FigureReport[], load = 1): Report => ({
  startedAt,
  seconds: 10,
  quick: false,
  machine: {
    node: "v20",
    platform: "linux-x64",
    cpus: 2,
    cpuModel: "CPU",
    loadAverage: { start: load, end: load + 1 },
  },
  figures,
});

describe("merging a partial bench run into the full report", () => {
  const full = report("2026-01-01T00:00:00.000Z", [
    figure(3, "indexing", 30),
    figure(4, "crawl", 40),
    figure(5, "search", 50),
  ]);
  const partial = report(
    "2026-02-02T00:00:00.000Z",
    [figure(4, "crawl", 4), figure(14, "x", 1)],
    3,
  );

  it("puts the partial run's figures in place of theirs, keeps the others, in figure order", () => {
    const merged = merge(full, partial);
    expect(merged.startedAt).toBe(full.startedAt);
    expect(merged.figures.map((f) => [f.id, f.seconds])).toEqual([
      ["indexing", 30],
      ["crawl", 4],
      ["search", 50],
      ["x", 1],
    ]);
    expect(merged.figures.filter((f) => f.remeasured).map((f) => f.id)).toEqual(["crawl", "x"]);
  });

  it("says in the report which figures were measured again, when, and under what load", () => {
    const markdown = renderMarkdown(merge(full, partial));
    const crawl = markdown.slice(markdown.indexOf("## 4."), markdown.indexOf("## 5."));
    expect(crawl).toContain("Measured again on its own");
    expect(crawl).toContain("2026-02-02T00:00:00.000Z");
    expect(crawl).toContain("3.0 to 4.0");
    expect(markdown.slice(markdown.indexOf("## 3."), markdown.indexOf("## 4."))).not.toContain(
      "Measured again",
    );
  });
});
