import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";

/**
 * The service's CloudWatch metrics, written as EMF lines in the function's log (no API call).
 * One dimension, `service`, and where it helps a second of a few fixed values (which quota):
 * never a workspace or a source, which would make a metric per tenant. Stored metrics are
 * flushed at the end of every invocation (lib/invocation.ts).
 */
export const metrics = new Metrics({ namespace: "kb-intel", serviceName: "kb-intel" });

/** Every metric the service writes, and what one unit of it is. */
const UNITS = {
  /** Knowledge sources the index worker finished: indexed, or failed for good. */
  SourcesIndexed: MetricUnit.Count,
  SourcesFailed: MetricUnit.Count,
  /** Pages crawls indexed, and pages they skipped (robots, filters, duplicates...) or failed. */
  CrawlPagesIndexed: MetricUnit.Count,
  CrawlPagesSkipped: MetricUnit.Count,
  /** Index and crawl messages put back because their workspace held all its slots of the worker. */
  SourcesDeferred: MetricUnit.Count,
  CrawlPagesDeferred: MetricUnit.Count,
  /** Competitor checks that read the site, and those that could not. */
  CompetitorChecks: MetricUnit.Count,
  CompetitorChecksFailed: MetricUnit.Count,
  /** Queued checks put back because their workspace held all its check slots, or given up. */
  CompetitorChecksDeferred: MetricUnit.Count,
  CompetitorChecksGivenUp: MetricUnit.Count,
  /** Webhook deliveries put back without connecting (endpoint busy or broken, workspace at its share). */
  WebhookDeliveriesDeferred: MetricUnit.Count,
  /** Times an endpoint's circuit breaker opened (consecutive failures, or a failed probe). */
  WebhookCircuitsOpened: MetricUnit.Count,
  /** Model operations (chat, structured answers, embedding batches) and the tokens they used. */
  ModelCalls: MetricUnit.Count,
  ModelTokens: MetricUnit.Count,
  /** Work refused by a daily quota; dimension `quota` (crawl_pages, upload_bytes...). */
  QuotaRefusals: MetricUnit.Count,
  CapRefusals: MetricUnit.Count,
} as const;

export type MetricName = keyof typeof UNITS;

/**
 * Adds `value` to a metric of this invocation; with a `dimension`, to its own data point
 * (published at once) beside `service`.
 */
export function count(name: MetricName, value = 1, dimension?: Record<string, string>): void {
  if (value <= 0) return;
  if (!dimension) {
    metrics.addMetric(name, UNITS[name], value);
    return;
  }
  const single = metrics.singleMetric();
  single.addDimensions(dimension);
  single.addMetric(name, UNITS[name], value);
}
