import { type LocalOptions, type LocalRuntime, startLocal } from "../../infra/local/runtime.js";

export interface TestRuntime {
  runtime: LocalRuntime;
  url: string;
  /** The default workspace's key. */
  key: string;
  /** A key of a second workspace, for isolation checks. */
  otherKey: string;
  /** fetch() against the runtime with a key (the default one unless given; null for none). */
  call(
    path: string,
    init?: RequestInit & { key?: string | null; json?: unknown },
  ): Promise<Response>;
  close(): Promise<void>;
}

/** The whole local runtime in this process, in memory, on a random port. */
export async function startTestRuntime(
  options: Pick<LocalOptions, "workerConcurrency"> = {},
): Promise<TestRuntime> {
  const runtime = await startLocal({
    port: 0,
    host: "127.0.0.1",
    dataDir: null,
    retryDelayMs: 20,
    ...options,
  });
  if (!runtime.newKey) throw new Error("a fresh runtime creates a key");
  const other = await runtime.keys.createWorkspace("Other");
  const { key: otherKey } = await runtime.keys.createKey(other.id);
  const key = runtime.newKey;
  return {
    runtime,
    url: runtime.url,
    key,
    otherKey,
    call(path, init = {}) {
      const { key: asKey = key, json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (asKey !== null) headers.set("authorization", `Bearer ${asKey}`);
      if (json !== undefined) headers.set("content-type", "application/json");
      return fetch(`${runtime.url}${path}`, {
        ...rest,
        headers,
        ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
      });
    },
    close: () => runtime.close(),
  };
}
