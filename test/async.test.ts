import { describe, expect, it } from "vitest";
import { limiter } from "../lib/async.js";

describe("limiter", () => {
  it("runs at most the limit at once, every task to completion, in arrival order", async () => {
    const slot = limiter(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const task = (i: number) => async () => {
      started.push(i);
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      return i;
    };
    const first = Array.from({ length: 5 }, (_, i) => slot(task(i)));
    // A task arriving while the first ones finish still waits its turn.
    const late = first[0]?.then(() => slot(task(5)));
    expect(await Promise.all([...first, late])).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(2);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("frees the slot of a task that fails", async () => {
    const slot = limiter(1);
    await expect(slot(async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await slot(async () => "next")).toBe("next");
  });

  it("lets a task with a maximum wait leave the line, and the rest keep their order", async () => {
    const slot = limiter(1);
    let release = () => {};
    const holder = slot(() => new Promise<string>((resolve) => (release = () => resolve("held"))));
    const busy = () => new Error("busy");
    const gaveUp = slot(async () => "never", { ms: 10, busy });
    const patient = slot(async () => "patient");
    await expect(gaveUp).rejects.toThrow("busy");
    release();
    expect(await Promise.all([holder, patient])).toEqual(["held", "patient"]);
    // The slot is free again: nothing stayed counted for the task that left.
    expect(await slot(async () => "free", { ms: 10, busy })).toBe("free");
  });
});
