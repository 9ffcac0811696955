/**
 * `npm run bench`. The service's modules read the environment when they load, so it is set here
 * first and everything else is imported after it: service logs at WARN (a JSON line per request
 * would be measured and would bury the progress lines), and no model key even if the shell has
 * one, so nothing leaves the machine and the numbers never depend on a provider.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= "WARN";
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
// An empty value means "not configured" (lib/llm/settings.ts).
process.env.OPENAI_API_KEY = "";
process.env.EMBEDDING_MODEL = "";

await import("./run.js");
