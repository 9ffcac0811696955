import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { FakeOpenAI } from "../support/fake-openai.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

/**
 * The local runtime as the hardening suites need it: limits too large to get in the way (the
 * suites prove other things; test/http/limits.test.ts proves the limits), the fake model behind
 * every model feature, and the private-URL switch in the state a suite asks for.
 */

export interface Hardened {
  rt: TestRuntime;
  model: FakeOpenAI;
  close(): Promise<void>;
}

export interface HardenedOptions {
  allowPrivate?: boolean;
  env?: Record<string, string>;
}

const ROOMY = "1000000000";

/** The environment of a hardened runtime whose model is `model`. */
function hardenedEnv(model: FakeOpenAI, options: HardenedOptions): Record<string, string> {
  return {
    ALLOW_PRIVATE_URLS: options.allowPrivate ? "true" : "false",
    RATE_LIMIT_PER_MINUTE: ROOMY,
    QUOTA_CRAWL_PAGES_PER_DAY: ROOMY,
    QUOTA_UPLOAD_BYTES_PER_DAY: ROOMY,
    QUOTA_MODEL_CALLS_PER_DAY: ROOMY,
    QUOTA_COMPETITOR_CHECKS_PER_DAY: ROOMY,
    OPENAI_API_KEY: "fake-key",
    OPENAI_BASE_URL: model.baseURL,
    EMBEDDING_MODEL: "fake-embedding",
    LLM_MAX_RETRIES: "0",
    CRAWL_POLITENESS_MS: "0",
    // A crawl's watchdog message waits this long in the queue, and queues.idle() waits for it.
    CRAWL_WATCH_SECONDS: "1",
    CHECK_POLITENESS_MS: "0",
    ...options.env,
  };
}

export async function startHardened(options: HardenedOptions = {}): Promise<Hardened> {
  const model = await FakeOpenAI.start();
  Object.assign(process.env, hardenedEnv(model, options));
  const rt = await startTestRuntime();
  return {
    rt,
    model,
    async close() {
      await rt.close();
      await model.close();
    },
  };
}

/** What the runtime process tells its parent once it serves. */
export interface ProcessReady {
  url: string;
  /** The default workspace's key, and a key of a second workspace. */
  key: string;
  otherKey: string;
  /** One resource of every kind in the default workspace (`seedOneOfEach`), ids by prefix. */
  ids: Record<string, string[]>;
}

export interface HardenedProcess extends ProcessReady {
  model: FakeOpenAI;
  /** How the process ended (`exit code 1`, `signal SIGKILL`), while it runs undefined. */
  ended(): string | undefined;
  /** Stops the runtime, killing it when it does not stop at once (a stalled one cannot). */
  close(): Promise<void>;
}

const exited = (child: ChildProcess, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });

/**
 * A hardened runtime in a process of its own, with one resource of every kind: a suite that times
 * the service keeps its own clock (and its time limits) while the service's event loop is
 * stalled, and ends it however stuck. The fake model stays in this process, so its work is never
 * counted as the service's.
 */
export async function startHardenedProcess(
  options: HardenedOptions = {},
): Promise<HardenedProcess> {
  const model = await FakeOpenAI.start();
  const entry = fileURLToPath(new URL("./runtime-process.ts", import.meta.url));
  // Node loads tsx itself, so signals reach the runtime rather than a tsx wrapper.
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    env: { ...process.env, ...hardenedEnv(model, options) },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const close = async () => {
    child.kill("SIGTERM");
    if (!(await exited(child, 3000))) {
      child.kill("SIGKILL");
      await exited(child, 3000);
    }
    await model.close();
  };
  try {
    const ready = await new Promise<ProcessReady>((resolve, reject) => {
      child.once("message", (message) => resolve(message as ProcessReady));
      child.once("exit", (code) => reject(new Error(`the runtime process exited with ${code}`)));
    });
    const ended = () =>
      child.exitCode !== null
        ? `exit code ${child.exitCode}`
        : child.signalCode
          ? `signal ${child.signalCode}`
          : undefined;
    return { ...ready, model, ended, close };
  } catch (err) {
    await close();
    throw err;
  }
}
