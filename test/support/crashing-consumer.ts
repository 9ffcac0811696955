import { LocalQueues } from "../../infra/local/queues.js";

/**
 * A process that consumes the `jobs` queue kept in the state file given as its argument, one
 * message at a time: a message `crash` kills the process on delivery (SIGKILL, nothing saved
 * after), any other is printed as `delivered <body>`. Once idle it prints the dead letters as
 * `dead <json>` and exits.
 */
const queues = new LocalQueues({
  stateFile: process.argv[2] as string,
  maxReceiveCount: Number(process.env.MAX_RECEIVE_COUNT),
});
await queues.start();
queues.create("jobs");
queues.consume(
  "jobs",
  async ({ Records }) => {
    for (const { body } of Records) {
      if (body === "crash") process.kill(process.pid, "SIGKILL");
      process.stdout.write(`delivered ${body}\n`);
    }
    return { batchItemFailures: [] };
  },
  { batchSize: 1, concurrency: 1 },
);
await queues.idle();
process.stdout.write(`dead ${JSON.stringify(queues.deadLetters("jobs").map((m) => m.body))}\n`);
await queues.close();
