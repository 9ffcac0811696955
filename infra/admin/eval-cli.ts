import { readdir, readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";

const usage = `Measure search on a set of questions: recall@k, MRR and nDCG@10 of lexical, hybrid and
reranked search, side by side (POST /api/knowledge/eval, 50 questions per request).

  npm run eval -- questions.jsonl [--k 5] [--url http://127.0.0.1:3000] [--key KEY]
      One JSON object per line: {"question": "...", "source_ids": ["kb_..."]} or
      {"question": "...", "passages": [{"source_id": "kb_...", "chunk_index": 0}]}.
  npm run eval -- bench/eval/questions.jsonl --corpus bench/eval/corpus
      First adds each file of the folder as a text source, waits until it is indexed, and reads
      "sources": ["file.md"] in the questions as those sources (the set shipped with the project).

The key is --key or KB_API_KEY (npm run keys -- create makes one for the local runtime).`;

interface Line {
  question: string;
  source_ids?: string[];
  passages?: Array<{ source_id: string; chunk_index: number }>;
  /** File names of the --corpus folder. */
  sources?: string[];
}

type Scores = { recall_at_k: number; mrr: number; ndcg_at_10: number } | null;
interface Report {
  k: number;
  questions: number;
  modes: Record<string, Scores>;
}

const BATCH = 50;

function client(url: string, key: string) {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(new URL(path, url), {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  };
}

type Api = ReturnType<typeof client>;

/** Adds each file as a text source and waits for all to be indexed; answers name → id. */
async function addCorpus(api: Api, folder: string): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (const file of (await readdir(folder)).sort()) {
    const text = await readFile(join(folder, file), "utf8");
    const { id } = await api<{ id: string }>("POST", "/api/knowledge", { text, name: file });
    ids.set(basename(file), id);
  }
  for (const [name, id] of ids) {
    for (;;) {
      const { status, last_error } = await api<{ status: string; last_error: string | null }>(
        "GET",
        `/api/knowledge/${id}`,
      );
      if (status === "indexed") break;
      if (status === "failed") throw new Error(`${name} failed to index: ${last_error}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  return ids;
}

function toQuestion(line: Line, corpus: Map<string, string> | undefined, at: number) {
  const { question, source_ids, passages, sources } = line;
  if (!sources) return { question, source_ids, passages };
  if (!corpus) throw new Error(`Line ${at}: "sources" names corpus files; give --corpus`);
  const ids = sources.map((name) => {
    const id = corpus.get(name);
    if (!id) throw new Error(`Line ${at}: no file ${name} in the corpus`);
    return id;
  });
  return { question, source_ids: ids };
}

const MODES = ["lexical", "hybrid", "reranked"] as const;

/** The batches' scores averaged, each weighted by its questions. */
function combine(reports: Report[]): Report {
  const questions = reports.reduce((n, r) => n + r.questions, 0);
  const modes: Record<string, Scores> = {};
  for (const mode of MODES) {
    if (reports.some((r) => r.modes[mode] === null)) {
      modes[mode] = null;
      continue;
    }
    const sum = (field: "recall_at_k" | "mrr" | "ndcg_at_10") =>
      reports.reduce((n, r) => n + (r.modes[mode]?.[field] ?? 0) * r.questions, 0) / questions;
    modes[mode] = {
      recall_at_k: sum("recall_at_k"),
      mrr: sum("mrr"),
      ndcg_at_10: sum("ndcg_at_10"),
    };
  }
  return { k: reports[0]?.k ?? 0, questions, modes };
}

function table(report: Report): string {
  const cell = (n: number) => n.toFixed(3).padStart(8);
  const rows = MODES.map((mode) => {
    const scores = report.modes[mode];
    const name = mode.padEnd(9);
    if (!scores) return `| ${name} | not configured              |`;
    return `| ${name} | ${cell(scores.recall_at_k)} | ${cell(scores.mrr)} | ${cell(scores.ndcg_at_10)} |`;
  });
  return [
    `${report.questions} questions, k = ${report.k}`,
    `| ranking   | recall@${String(report.k).padEnd(2)} |      MRR |  nDCG@10 |`,
    "| --------- | -------- | -------- | -------- |",
    ...rows,
  ].join("\n");
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      k: { type: "string", default: "5" },
      url: { type: "string", default: "http://127.0.0.1:3000" },
      key: { type: "string" },
      corpus: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [file] = positionals;
  const key = values.key ?? process.env.KB_API_KEY;
  if (values.help || !file || !key) {
    console.log(usage);
    return values.help ? 0 : 2;
  }
  const api = client(values.url, key);
  const lines = (await readFile(file, "utf8"))
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);
  const corpus = values.corpus ? await addCorpus(api, values.corpus) : undefined;
  const questions = lines.map((line, i) => toQuestion(line, corpus, i + 1));
  const reports: Report[] = [];
  for (let i = 0; i < questions.length; i += BATCH) {
    const batch = questions.slice(i, i + BATCH);
    reports.push(
      await api<Report>("POST", "/api/knowledge/eval", { questions: batch, k: Number(values.k) }),
    );
  }
  console.log(table(combine(reports)));
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
