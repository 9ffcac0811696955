import { describe, expect, it } from "vitest";
import { MemoryBudget, processBudgetMb } from "../../lib/files/budget.js";
import { ParseError } from "../../lib/files/errors.js";
import { DEFAULT_PARSE_LIMITS } from "../../lib/files/limits.js";
import { type FileInput, parseFile } from "../../lib/files/parse.js";
import { Sandbox, THREAD_OVERHEAD_MB } from "../../lib/files/sandbox.js";
import { extractPage, warmPageReader } from "../../lib/web/extract.js";
import { DEFAULT_EXTRACT_LIMITS } from "../../lib/web/page.js";
import { htmlPage, prose } from "../support/sites.js";

/**
 * The sandbox's one memory budget per process: threads reserve their heap limit before they
 * start, and parses and page reads running at once share it.
 */

/** A budget that keeps its own count of what it granted, and the most it held at once. */
class WatchedBudget extends MemoryBudget {
  held = 0;
  peak = 0;
  readonly grants: number[] = [];

  override tryReserve(mb: number): boolean {
    const granted = super.tryReserve(mb);
    if (granted) {
      this.held += mb;
      this.peak = Math.max(this.peak, this.held);
      this.grants.push(mb);
    }
    return granted;
  }

  override release(mb: number): void {
    this.held -= mb;
    super.release(mb);
  }
}

/** The index worker's: 1,024 MB of function memory, five records per batch. */
const INDEX_WORKER_BUDGET = processBudgetMb({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "1024" });
const PARSE_THREAD_MB = DEFAULT_PARSE_LIMITS.maxHeapMb + THREAD_OVERHEAD_MB;
const PAGE_THREAD_MB = DEFAULT_EXTRACT_LIMITS.maxHeapMb + THREAD_OVERHEAD_MB;

const file = (filename: string, text: string): FileInput => ({
  filename,
  bytes: Buffer.from(text),
});

const outcome = (promise: Promise<{ text: string }>) =>
  promise.then(
    ({ text }) => text,
    (err: unknown) => (err instanceof ParseError ? `ParseError ${err.code}` : err),
  );

describe("the process's memory budget", () => {
  it("is 60% of a Lambda function's memory, or a quarter of the machine's locally (2 GB at most)", () => {
    const GiB = 1024 ** 3;
    expect(processBudgetMb({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "1024" }, 64 * GiB)).toBe(614);
    expect(processBudgetMb({}, 4 * GiB)).toBe(1024);
    expect(processBudgetMb({}, 64 * GiB)).toBe(2048);
  });

  it("holds a batch of five maximal files within the index worker's budget", async () => {
    const budget = new WatchedBudget(INDEX_WORKER_BUDGET);
    const sandbox = new Sandbox(budget);
    const files = [
      file("one.md", "# One"),
      file("two.txt", "Two"),
      file("three.csv", "Name,Role\nAda,CTO\n"),
      file("blank.md", "\n\n"),
      file("five.md", "# Five"),
    ];
    const results = await Promise.all(files.map((f) => outcome(parseFile(f, { sandbox }))));
    expect(results).toEqual(["# One", "Two", "Name: Ada; Role: CTO", "ParseError empty", "# Five"]);
    // One thread, its whole heap limit reserved, is all this budget holds: it served them in turn.
    expect(budget.grants).toEqual([PARSE_THREAD_MB]);
    expect(budget.peak).toBe(PARSE_THREAD_MB);
    expect(budget.peak).toBeLessThanOrEqual(INDEX_WORKER_BUDGET);
  });

  it("is shared by parses and page reads running at once", async () => {
    const budget = new WatchedBudget(INDEX_WORKER_BUDGET);
    const sandbox = new Sandbox(budget);
    // Threads start while others wait: allow for start-up on a busy machine.
    const limits = { timeoutMs: 60_000 };
    const page = (topic: string) => {
      const html = htmlPage(topic, `<article>${prose(topic)}</article>`);
      return extractPage(html, "https://example.com/", { sandbox, limits }).then((p) => p.title);
    };
    const parse = (name: string, text: string) =>
      outcome(parseFile(file(name, text), { sandbox, limits }));
    const results = await Promise.all([
      page("Alpha"),
      page("Beta"),
      parse("one.md", "# One"),
      parse("two.md", "# Two"),
    ]);
    expect(results).toEqual(["Alpha", "Beta", "# One", "# Two"]);
    expect(new Set(budget.grants)).toEqual(new Set([PARSE_THREAD_MB, PAGE_THREAD_MB]));
    expect(budget.peak).toBeLessThanOrEqual(INDEX_WORKER_BUDGET);
  });

  it("runs as many tasks at once as it has cores for, on warm threads, however many are asked", async () => {
    // Room for eight page threads, two cores: two threads serve all eight pages in turn, instead
    // of eight threads each loading jsdom and sharing the two cores.
    const budget = new WatchedBudget(8 * PAGE_THREAD_MB);
    const sandbox = new Sandbox(budget, undefined, 2);
    const limits = { timeoutMs: 60_000 };
    const topics = ["Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta", "Theta"];
    const titles = await Promise.all(
      topics.map((topic) => {
        const html = htmlPage(topic, `<article>${prose(topic)}</article>`);
        return extractPage(html, "https://example.com/", { sandbox, limits }).then((p) => p.title);
      }),
    );
    expect(titles).toEqual(topics);
    expect(budget.grants).toEqual([PAGE_THREAD_MB, PAGE_THREAD_MB]);
  });

  it("starts a thread ahead of its first task when warmed, and that task takes it", async () => {
    const budget = new WatchedBudget(4 * PAGE_THREAD_MB);
    const sandbox = new Sandbox(budget, undefined, 2);
    warmPageReader({ sandbox });
    expect(budget.grants).toEqual([PAGE_THREAD_MB]);
    // Already warm: no second thread.
    warmPageReader({ sandbox });
    const html = htmlPage("Warm", `<article>${prose("Warm")}</article>`);
    const page = await extractPage(html, "https://example.com/", { sandbox });
    expect(page.title).toBe("Warm");
    expect(budget.grants).toEqual([PAGE_THREAD_MB]);
  });

  it("fails a task that waits longer than its deadline for memory as an outage, not the file's fault", async () => {
    const budget = new MemoryBudget(300);
    const sandbox = new Sandbox(budget);
    const limits = { maxHeapMb: 64, timeoutMs: 200 };
    expect(budget.tryReserve(250)).toBe(true);
    const waited = parseFile(file("late.md", "# Late"), { sandbox, limits });
    await expect(waited).rejects.toThrow("No sandbox thread free within 0.2 seconds");
    await expect(waited).rejects.not.toBeInstanceOf(ParseError);
    budget.release(250);
    const next = parseFile(file("next.md", "# Next"), { sandbox, limits: { maxHeapMb: 64 } });
    expect((await next).text).toBe("# Next");
  });

  it("gives a thread no more heap than the budget holds", async () => {
    const budget = new WatchedBudget(200);
    const sandbox = new Sandbox(budget);
    expect((await parseFile(file("small.md", "# Small"), { sandbox })).text).toBe("# Small");
    expect(budget.grants).toEqual([200]);
  });
});
