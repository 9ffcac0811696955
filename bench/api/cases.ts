import type { LocalRuntime } from "../../infra/local/runtime.js";
import type { Retriever } from "../../lib/knowledge/retrieval/retrieval.js";
import type { Sources } from "../../lib/knowledge/sources/sources.js";
import type { Workspace } from "../core/figure.js";
import type { LoadJob } from "../core/load.js";

/** One route under load, or the bare route it is compared with. */
export interface Case {
  name: string;
  floor?: string;
  job: Omit<LoadJob, "connections" | "seconds">;
  /** Runs after each load run, untimed: lets queued work finish so it does not spill over. */
  settle?: () => Promise<void>;
  /**
   * The service call behind the route, made in this process without HTTP: what the route takes
   * beyond it is the HTTP server, Hono, auth and validation; what it takes itself is mostly the
   * emulators'.
   */
  direct?: { label: string; call: () => Promise<unknown> };
}

export interface CaseEnv {
  runtime: LocalRuntime;
  bareUrl: string;
  /** The workspace holding the seeded sources, read by the list and search cases. */
  reads: Workspace;
  /** Where the create case writes, so the read workspace stays as seeded. */
  writes: Workspace;
  sourceCount: number;
  sources: Sources;
  retriever: Retriever;
  text: string;
  query: string;
}

const JSON_TYPE = { "content-type": "application/json" };

/** The three routes of issue 8, each after the bare route with the same method and body. */
export function apiCases(env: CaseEnv): Case[] {
  const { runtime, bareUrl, reads, writes, sourceCount } = env;
  const key = (workspace: Workspace) => ({ authorization: `Bearer ${workspace.key}` });
  const createBody = JSON.stringify({ text: env.text, name: "Bench source" });
  const searchBody = JSON.stringify({ query: env.query });
  return [
    { name: "bare GET", job: { url: `${bareUrl}/hello`, method: "GET" } },
    {
      name: `GET /api/knowledge (${sourceCount} sources)`,
      floor: "bare GET",
      job: { url: `${runtime.url}/api/knowledge`, method: "GET", headers: key(reads) },
      direct: {
        label: "Sources.list()",
        call: () => env.sources.list(reads.workspaceId, {}, 50),
      },
    },
    {
      name: "bare POST (create body)",
      job: { url: `${bareUrl}/echo`, method: "POST", headers: JSON_TYPE, body: createBody },
    },
    {
      name: "POST /api/knowledge",
      floor: "bare POST (create body)",
      job: {
        url: `${runtime.url}/api/knowledge`,
        method: "POST",
        headers: { ...key(writes), ...JSON_TYPE },
        body: createBody,
      },
      settle: () => runtime.queues.idle(),
      direct: {
        label: "Sources.createText()",
        call: () => env.sources.createText(writes.workspaceId, env.text, "Bench source"),
      },
    },
    {
      name: "bare POST (search body)",
      job: { url: `${bareUrl}/echo`, method: "POST", headers: JSON_TYPE, body: searchBody },
    },
    {
      name: `POST /api/knowledge/search (${sourceCount} sources)`,
      floor: "bare POST (search body)",
      job: {
        url: `${runtime.url}/api/knowledge/search`,
        method: "POST",
        headers: { ...key(reads), ...JSON_TYPE },
        body: searchBody,
      },
      direct: {
        label: "IndexRetriever.search()",
        call: () => env.retriever.search(reads.workspaceId, env.query, 10),
      },
    },
  ];
}

/**
 * One untimed request per case, then the queues drained: the runtime's retriever builds its
 * index on its first search, which is figure 5's business, not this figure's.
 */
export async function warmUp(cases: Case[], runtime: LocalRuntime): Promise<void> {
  for (const { job } of cases) {
    const init = { method: job.method, headers: job.headers ?? {}, body: job.body ?? null };
    const response = await fetch(job.url, init);
    if (!response.ok) throw new Error(`${job.method} ${job.url} answered ${response.status}`);
  }
  await runtime.queues.idle();
}
