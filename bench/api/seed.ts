import type { LocalRuntime } from "../../infra/local/runtime.js";
import { mapLimit } from "../../lib/async.js";
import { Corpus } from "../core/corpus.js";
import type { Workspace } from "../core/figure.js";

/**
 * `count` text sources of 1.5 KB created through `POST /api/knowledge` and indexed by the
 * worker, as a user's would be; answers the seconds it took.
 */
export async function seedThroughApi(
  runtime: LocalRuntime,
  workspace: Workspace,
  count: number,
): Promise<number> {
  const started = performance.now();
  const corpus = new Corpus(21);
  const indexes = Array.from({ length: count }, (_, i) => i);
  await mapLimit(indexes, 8, async (i) => {
    const response = await fetch(`${runtime.url}/api/knowledge`, {
      method: "POST",
      headers: { authorization: `Bearer ${workspace.key}`, "content-type": "application/json" },
      body: JSON.stringify({ text: corpus.document(1500), name: `Seed ${i}` }),
    });
    if (!response.ok) throw new Error(`seeding answered ${response.status}`);
  });
  await runtime.queues.idle();
  return (performance.now() - started) / 1000;
}
