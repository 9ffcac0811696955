import { type LocalRuntime, startLocal } from "../../infra/local/runtime.js";
import { loadConfig } from "../../lib/config.js";
import { createStores, type Stores } from "../../lib/store/clients.js";
import { Queue } from "../../lib/store/queue.js";
import type { BenchContext } from "./figure.js";

/** The context every figure of one run shares; `close` stops the runtime if one was started. */
export function createContext(options: {
  quick: boolean;
  outDir: string;
  log: (message: string) => void;
}): BenchContext & { close(): Promise<void> } {
  let runtime: Promise<LocalRuntime> | undefined;
  let stores: Stores | undefined;
  const getRuntime = () => {
    runtime ??= startLocal({ port: 0, host: "127.0.0.1", dataDir: null });
    return runtime;
  };
  const getStores = async () => {
    // startLocal points the SDK's endpoint variables at its emulators; clients read them here.
    await getRuntime();
    stores ??= createStores(loadConfig());
    return stores;
  };
  return {
    ...options,
    runtime: getRuntime,
    stores: getStores,
    async s3() {
      await getRuntime();
      return {
        endpoint: process.env.AWS_ENDPOINT_URL_S3 ?? "",
        region: process.env.AWS_REGION ?? "us-east-1",
        accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? "",
        secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? "",
      };
    },
    async workspace(name) {
      const { keys } = await getRuntime();
      const { id } = await keys.createWorkspace(name);
      return { workspaceId: id, key: (await keys.createKey(id, "bench")).key };
    },
    async parkedQueue(name) {
      const { queues } = await getRuntime();
      const { indexQueue } = await getStores();
      return {
        queue: new Queue(indexQueue.sqs, queues.create(name)),
        messages: () => queues.pending(name),
      };
    },
    async close() {
      if (runtime) await (await runtime).close();
    },
  };
}
