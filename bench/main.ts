/**
 * `npm run bench`. The service's modules read the environment when they load, so it is set here
 * first and everything else is imported after it: service logs at WARN (a JSON line per request
 * would be measured and would bury the progress lines), and no model key even if the shell has
 * one, so nothing leaves the machine and the numbers never depend on a provider.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= "WARN";
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
// EMF metric lines are for CloudWatch; figure 26 runs workers in this process by the thousand.
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
// An empty value means "not configured" (lib/llm/settings.ts).
process.env.OPENAI_API_KEY = "";
process.env.EMBEDDING_MODEL = "";
// Figures 4 and 6 crawl and check fixture sites served by the bench on 127.0.0.1: the runtime may
// reach loopback only with this development switch.
process.env.ALLOW_PRIVATE_URLS = "true";
// Crawls run without politeness, so figure 4 measures the crawl's own cost, not its pace; its paced
// row serves a robots.txt `Crawl-delay` of the default floor (100 ms), which paces that site alone.
process.env.CRAWL_POLITENESS_MS = "0";
// The service enforces 600 requests a minute per workspace and daily quotas per workspace by
// default; figure 2 seeds 1,000 sources and drives thousands of requests a minute, and figure 4
// crawls 200 pages a round. Raised far above what any figure uses, so no row measures a 429.
process.env.RATE_LIMIT_PER_MINUTE = "100000000";
process.env.QUOTA_CRAWL_PAGES_PER_DAY = "100000000";
process.env.QUOTA_UPLOAD_BYTES_PER_DAY = String(1024 ** 4);
process.env.QUOTA_MODEL_CALLS_PER_DAY = "100000000";
process.env.QUOTA_COMPETITOR_CHECKS_PER_DAY = "100000000";

await import("./run.js");
