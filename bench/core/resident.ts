import { readFile } from "node:fs/promises";

/**
 * A process's resident memory now and at its peak so far (Linux's VmRSS and VmHWM), in MB: the
 * peak is the kernel's own high-water mark, so a spike between two samples is not missed.
 */
export async function resident(pid: number | "self"): Promise<{ rssMb: number; peakMb: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
  return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 };
}
