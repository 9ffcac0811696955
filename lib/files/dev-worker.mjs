// Starts the TypeScript parser thread when the service runs from its sources (tsx, vitest).
// Node 20 does not pass `--import tsx` hooks on to worker threads, so the thread registers tsx
// itself before importing the entry named in workerData. Bundled builds never load this file.
import { workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
await import(workerData.entry);
