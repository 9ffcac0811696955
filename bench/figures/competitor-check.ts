import { API_CHECK_LIMITS } from "../../lib/competitors/check.js";
import { loadHtml } from "../../lib/competitors/extract/html.js";
import { createCompetitorServices } from "../../lib/competitors/services.js";
import { ALL_KINDS, decodeText } from "../../lib/web/content-type.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { startCompetitorSite } from "../../test/support/competitor-site.js";
import type { Figure, Row } from "../core/figure.js";
import { interleave, time } from "../core/measure.js";
import { summarize } from "../core/stats.js";
import { type Measured, storeCalls, storeCells, storeColumns } from "../core/store-calls.js";

const ROUNDS = 12;
const QUICK_ROUNDS = 2;

/** Rows timed without counting store calls (over HTTP, the floor) say nothing of them. */
function row(
  name: string,
  samples: Array<Measured | number>,
  fetches: number,
  floor?: string,
): Row {
  const measured = samples.filter((s): s is Measured => typeof s !== "number");
  const cells =
    measured.length === samples.length
      ? storeCells(measured, "time")
      : {
          time: summarize(samples.map((s) => (typeof s === "number" ? s : s.ms))),
          store: null,
          calls: null,
        };
  return { name, ...(floor ? { floor } : {}), cells: { ...cells, fetches } };
}

export const figure: Figure = {
  number: 6,
  id: "competitor-check",
  title: "Competitor check",
  description:
    "A competitor's fixture site on 127.0.0.1 (`test/support/competitor-site.ts`: home page, " +
    "pricing, careers with its own job list, blog, feed, sitemap, robots.txt) tracked in a " +
    "workspace, then checked through `POST /api/intel/competitors/{id}/check` on the local " +
    "runtime, its content unchanged since the baseline check (made first, untimed). Floor: the " +
    "same URLs fetched one after another by the safe fetcher (`SafeFetcher`, private hosts " +
    "allowed) and every HTML page parsed as the check parses it (htmlparser2). Between them, " +
    "the same check made in process by `Checker` with no politeness gap, its store calls counted.",
  async run(ctx) {
    const site = await startCompetitorSite();
    site.state.jobBoard = "html";
    try {
      const runtime = await ctx.runtime();
      const stores = await ctx.stores();
      const { key, workspaceId } = await ctx.workspace("competitor check");
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      const added = await fetch(`${runtime.url}/api/intel/competitors`, {
        method: "POST",
        headers,
        body: JSON.stringify({ domain: site.origin }),
      });
      if (added.status !== 201) throw new Error(`adding a competitor answered ${added.status}`);
      const { id } = (await added.json()) as { id: string };
      const overApi = async () => {
        const res = await fetch(`${runtime.url}/api/intel/competitors/${id}/check`, {
          method: "POST",
          headers,
        });
        const body = (await res.json()) as { result?: { ok: boolean } };
        if (!res.ok || !body.result?.ok) throw new Error(`check answered ${res.status}`);
      };
      // The baseline: the first check records snapshots; the ones measured compare with them.
      await overApi();
      const before = site.requests.length;
      await overApi();
      const paths = site.requests.slice(before);

      const web = new SafeFetcher({ allowPrivate: true });
      const { checker } = createCompetitorServices({
        ...stores,
        fetcher: web,
        limits: { ...API_CHECK_LIMITS, politenessMs: 0 },
      });
      const calls = storeCalls(stores);
      const fetchAndParse = async () => {
        for (const path of paths) {
          const url = `${site.origin}${path}`;
          const res = await web.fetch(url, { accept: ALL_KINDS }).catch(() => undefined);
          if (res?.kind === "html") loadHtml(res.url, decodeText(res.body, res.charset));
        }
      };
      const rounds = ctx.quick ? QUICK_ROUNDS : ROUNDS;
      ctx.log(`competitor check: ${paths.length} requests a check × ${rounds}`);
      const samples = await interleave<"api" | "direct" | "floor", Measured | number>(rounds, {
        api: () => time(overApi),
        direct: () =>
          calls.measure(async () => {
            const result = await checker.check(workspaceId, id);
            if (!result.ok) throw new Error(`the in-process check failed: ${result.summary}`);
          }),
        floor: () => time(fetchAndParse),
      });
      const floor = "same URLs: SafeFetcher + parse, one after another";
      return {
        tables: [
          {
            caption: `A check of an unchanged site (${paths.length} requests)`,
            compare: "time",
            columns: [
              { key: "time", label: "time", unit: "ms" },
              ...storeColumns,
              { key: "fetches", label: "requests", digits: 0 },
            ],
            rows: [
              row(
                `POST /api/intel/competitors/{id}/check (${API_CHECK_LIMITS.politenessMs} ms politeness)`,
                samples.api,
                paths.length,
                floor,
              ),
              row(
                "Checker.check() in process, no politeness gap",
                samples.direct,
                paths.length,
                floor,
              ),
              row(floor, samples.floor, paths.length),
            ],
          },
        ],
        notes: [
          `Requests of one check, in order: ${paths.map((p) => `\`${p}\``).join(", ")}.`,
          `API checks wait ${API_CHECK_LIMITS.politenessMs} ms between two requests to one host ` +
            "(`API_CHECK_LIMITS` in lib/competitors/check.ts, not configurable); queued checks " +
            "wait `CHECK_POLITENESS_MS`.",
        ],
      };
    } finally {
      await site.close();
    }
  },
};
