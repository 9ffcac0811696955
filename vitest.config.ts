import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest runs one file fewer than the machine has cores at a time: one, on CI's two cores. Most
    // files wait far more than they compute (Chromium, the emulators, child processes, HTTP on
    // loopback), so two files at a time keep both cores busy; every test holds on a loaded machine
    // (no verdict depends on speed), and each file has its own ports, folders and emulators.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    env: {
      POWERTOOLS_LOG_LEVEL: "SILENT",
      // EMF lines of every worker invocation would flood the output; test/observability reads them.
      POWERTOOLS_METRICS_DISABLED: "true",
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
    },
  },
});
