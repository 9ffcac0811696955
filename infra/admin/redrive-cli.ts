import { SQSClient, StartMessageMoveTaskCommand } from "@aws-sdk/client-sqs";
import { QUEUES } from "../../functions/manifest.js";
import { runningRuntime } from "../local/runtime.js";

// The Lambdas run Node 22; locally Node 20 is supported, so the SDK's upgrade notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const usage = `Move a dead-letter queue's messages back to their queue for another try. A knowledge
source that failed on its message's last delivery goes back to indexing when its message
returns, and is indexed once the cause (its last_error) is gone.

  npm run redrive -- index                     the local runtime's queue (it must be running)
  npm run redrive -- arn:aws:sqs:...:...dlq... a deployed dead-letter queue (stack output
                                               <queue>DeadLetterQueueArn), with AWS credentials

Queues: ${QUEUES.join(", ")}`;

async function main(target: string | undefined): Promise<number> {
  if (!target || target === "--help" || target === "-h") {
    process.stdout.write(`${usage}\n`);
    return target ? 0 : 2;
  }
  let sqs: SQSClient;
  let sourceArn: string;
  if (target.startsWith("arn:")) {
    sqs = new SQSClient({});
    sourceArn = target;
  } else {
    const dataDir = process.env.DATA_DIR ?? "./.data";
    const running = await runningRuntime(dataDir);
    if (!running) {
      process.stderr.write(`No local runtime is running on ${dataDir}; start it with npm start\n`);
      return 1;
    }
    sqs = new SQSClient({
      endpoint: running.sqsEndpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    sourceArn = `arn:aws:sqs:us-east-1:000000000000:${target}-dlq`;
  }
  const task = await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: sourceArn }));
  process.stdout.write(`redrive started for ${sourceArn} (task ${task.TaskHandle})\n`);
  return 0;
}

process.exitCode = await main(process.argv[2]);
