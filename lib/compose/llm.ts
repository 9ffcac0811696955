import type { Config } from "../config.js";
import { createLlm } from "../llm/provider.js";
import { toLlmSettings } from "../llm/settings.js";
import { secretReader } from "../store/secrets.js";

/**
 * The model clients of a function that calls the model. With LLM_API_KEY_SECRET (on AWS) the key
 * is read from that secret at run time and cached for LLM_API_KEY_CACHE_SECONDS, so rotating it
 * needs no deploy; without it (locally) the key is OPENAI_API_KEY.
 */
export function llmOf(config: Config) {
  const settings = toLlmSettings(config);
  const secret = config.LLM_API_KEY_SECRET;
  return createLlm(
    secret
      ? { ...settings, apiKey: secretReader(secret, config.LLM_API_KEY_CACHE_SECONDS) }
      : settings,
  );
}
