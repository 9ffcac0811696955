import type { z } from "@hono/zod-openapi";
import type {
  checkAllCompetitors,
  checkCompetitor,
  competitorPrices,
  createCompetitor,
  getCompetitor,
  listAlertRules,
  listCompetitors,
  listEvents,
  patchEvent,
} from "../../competitors/contract.js";
import type { ValidationIssue } from "../../http/app.js";
import type { ErrorSchema } from "../../http/schemas.js";
import type { createArtifact, getArtifact, listArtifacts } from "../../intel/artifacts/contract.js";
import type { getBrand } from "../../intel/brand/contract.js";
import type { chat } from "../../intel/chat/contract.js";
import type { ChatEvent } from "../../intel/chat/grounded-chat.js";
import type { generateIntel } from "../../intel/generate/contract.js";
import type {
  deleteCrawlSources,
  getCrawl,
  listCrawlPages,
  listCrawls,
  startCrawl,
} from "../../knowledge/crawl/contract.js";
import type {
  createSource,
  listSources,
  searchKnowledge,
} from "../../knowledge/sources/contract.js";
import type { createUpload } from "../../knowledge/uploads/contract.js";
import type { getUsage } from "../../limits/contract.js";
import type { createWebhook, listDeliveries, listWebhooks } from "../../webhooks/contract.js";

/**
 * What the API answers, as the console reads it: each type is the output of the zod schema a
 * route answers with (its contract, `lib/<module>/contract.ts`), so an answer that changes there
 * fails the type check here. Type-only imports: esbuild erases them, nothing of the server is in
 * the bundle (test/console/source.test.ts keeps it so).
 */

/** The schema of a JSON body, a response's or a request's. */
type JsonSchema<Part> = Part extends { content: { "application/json": { schema: infer S } } }
  ? S
  : never;

/** What a route answers with `status` (200 unless said). */
export type Answer<
  Route extends { responses: object },
  Status extends keyof Route["responses"] = 200 & keyof Route["responses"],
> = z.output<JsonSchema<Route["responses"][Status]>>;

/** What a route takes as its JSON body. */
type Body<Route extends { request: { body: unknown } }> = z.input<
  JsonSchema<Route["request"]["body"]>
>;

// Errors (every route's): the body, and the 400's `details.issues`.
export type ErrorBody = z.output<typeof ErrorSchema>;
export type Issue = ValidationIssue;

// Knowledge: sources, uploads, crawls, search.
export type SourcePage = Answer<typeof listSources>;
export type Source = SourcePage["sources"][number];
export type SourceAccepted = Answer<typeof createSource>;
export type PendingUpload = Answer<typeof createUpload>;
export type Crawl = Answer<typeof getCrawl>;
export type CrawlList = Answer<typeof listCrawls>;
export type CrawlStarted = Answer<typeof startCrawl>;
export type CrawlPages = Answer<typeof listCrawlPages>;
export type CrawlPage = CrawlPages["pages"][number];
export type CrawlSourcesDeleted = Answer<typeof deleteCrawlSources>;
export type SearchAnswer = Answer<typeof searchKnowledge>;
export type SearchResult = SearchAnswer["results"][number];

// Chat, the brand profile, intel modules and artifacts.
export type ChatAnswer = Answer<typeof chat>;
export type Citation = ChatAnswer["citations"][number];
/** One earlier turn of a conversation, as a chat request sends it. */
export type ChatTurn = NonNullable<Body<typeof chat>["history"]>[number];
/** A streamed chat's `delta` event (its schema is prose in the contract; the route sends this). */
export type ChatDelta = Pick<Extract<ChatEvent, { type: "delta" }>, "text">;
export type BrandProfile = Answer<typeof getBrand>;
export type Generated = Answer<typeof generateIntel>;
export type Artifact = Answer<typeof getArtifact>;
export type ArtifactSaved = Answer<typeof createArtifact, 201>;
export type ArtifactPage = Answer<typeof listArtifacts>;
export type ArtifactSummary = ArtifactPage["artifacts"][number];

// Competitors and their events.
export type CompetitorPage = Answer<typeof listCompetitors>;
export type Competitor = CompetitorPage["competitors"][number];
export type CompetitorCreated = Answer<typeof createCompetitor, 201>;
export type CompetitorState = Answer<typeof getCompetitor>;
export type CheckAnswer = Answer<typeof checkCompetitor>;
export type ChecksQueued = Answer<typeof checkAllCompetitors, 202>;
export type EventPage = Answer<typeof listEvents>;
export type IntelEvent = Answer<typeof patchEvent>;
export type PriceSeries = Answer<typeof competitorPrices>["plans"][number];
export type AlertRule = Answer<typeof listAlertRules>["rules"][number];

// Settings: usage and webhooks.
export type Usage = Answer<typeof getUsage>;
export type WebhookPage = Answer<typeof listWebhooks>;
export type Webhook = WebhookPage["webhooks"][number];
export type WebhookCreated = Answer<typeof createWebhook, 201>;
export type Deliveries = Answer<typeof listDeliveries>;
