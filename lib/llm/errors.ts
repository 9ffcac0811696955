import { DomainError } from "../errors.js";

/*
 * The model features' domain errors. What the provider's SDK throws becomes one of them in
 * `sdk-errors.ts`, kept apart so that route contracts and schemas can name these without
 * bundling the SDK.
 */

/** What every model feature answers while no provider key is configured. */
export const llmUnavailable = () =>
  new DomainError(
    "llm_unavailable",
    "No language model is configured for this service; model features are off",
  );

/** The model answered, but not with something usable. */
export const llmError = (message: string, details?: unknown) =>
  new DomainError("llm_error", message, { details });

export const upstreamTimeout = () =>
  new DomainError("upstream_timeout", "The language model did not answer in time; try again");
