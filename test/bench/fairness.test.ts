import { describe, expect, it } from "vitest";
import { simulate } from "../../bench/fairness/simulation.js";
import { CHECK_CAPACITY } from "../../lib/competitors/capacity.js";
import { WORKER_SHARES } from "../../lib/limits/worker-shares.js";

/**
 * The bench's fairness simulation (figure 26) at a small size: the shares it proves, never its
 * timings. Eight tenants with three competitors each are swept once; one tenant's sites hang and
 * it asks for all its checks at once, another imports thirty sources at once.
 */
describe("a simulated night with hostile tenants", () => {
  it("holds every tenant to its share of the check and index workers, and finishes all work", async () => {
    const night = await simulate({
      tenants: 8,
      competitors: 3,
      // Slow enough that a loaded machine's own delays stay well inside the leases and timeouts.
      scale: 20,
      hostile: true,
      importSources: 30,
      // Two minutes of the service instead of the model's hour: the shares, not the spread.
      spreadSeconds: 120,
    });
    // The sweep's 24 checks and the check-all's 3 all ran; none was given up.
    expect(night.checks).toBe(27);
    expect(night.givenUp).toBe(0);
    expect(night.deadLetters).toBe(0);
    const hanging = night.waits.get(night.hanging);
    const importer = night.waits.get(night.importer);
    // Three hanging checks queued at once ran at most its share at a time, the rest put back ...
    expect(hanging?.checks).toHaveLength(6);
    expect(hanging?.mostChecks).toBeLessThanOrEqual(CHECK_CAPACITY.workspaceSlots);
    expect(night.deferred).toBeGreaterThan(0);
    // ... and thirty sources imported at once (beside its own one source, as every tenant's)
    // indexed at most the importer's share at a time.
    expect(importer?.index).toHaveLength(30 + 1);
    expect(importer?.mostIndexing).toBe(WORKER_SHARES.index.perWorkspace);
    // Every other tenant had its check and its source run.
    for (const [tenant, w] of night.waits) {
      if (tenant === night.hanging || tenant === night.importer) continue;
      expect(w.checks, tenant).toHaveLength(3);
      expect(w.index, tenant).toHaveLength(1);
    }
    expect(night.waits.size).toBe(8);
  }, 120_000);
});
