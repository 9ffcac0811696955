import autocannon from "autocannon";
import type { LoadJob, LoadResult } from "./load.js";

/** The child side of `LoadClient`: runs each job it is sent and answers its raw latencies. */
async function run(job: LoadJob): Promise<LoadResult> {
  const latencies: number[] = [];
  let failures = 0;
  let firstFailure: number | undefined;
  const options: autocannon.Options = {
    url: job.url,
    method: job.method,
    connections: job.connections,
    duration: job.seconds,
    ...(job.headers ? { headers: job.headers } : {}),
    ...(job.body === undefined ? {} : { body: job.body }),
  };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(options, (err: unknown, done) =>
      err ? reject(err) : resolve(done),
    );
    instance.on("response", (_client, status, _bytes, ms) => {
      if (status >= 200 && status < 300) latencies.push(ms);
      else {
        failures++;
        firstFailure ??= status;
      }
    });
  });
  return {
    latencies,
    throughput: latencies.length / (result.duration || job.seconds),
    failures: failures + result.errors + result.timeouts,
    ...(firstFailure === undefined ? {} : { firstFailure }),
  };
}

process.on("message", (job: LoadJob) => {
  run(job).then(
    (result) => process.send?.(result),
    (err: unknown) => {
      process.stderr.write(`load client: ${String(err)}\n`);
      process.exit(1);
    },
  );
});

// The bench exited or dropped this client: nothing more will come.
process.on("disconnect", () => process.exit(0));
