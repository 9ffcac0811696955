import { createRoute, z } from "@hono/zod-openapi";
import {
  commonErrors,
  cursorParam,
  ErrorSchema,
  flagParam,
  IdempotencyHeaders,
  idempotencyErrors,
  jsonBody,
  jsonResponse,
  limitParam,
  NoQuery,
  oneOrSeveralParam,
  pageOf,
} from "../http/schemas.js";
import { RenderSchema } from "../web/render/schema.js";
import { CADENCES, DEFAULT_CADENCE } from "./cadence.js";
import { CHANGE_KINDS } from "./changes.js";
import { RULE_FIELDS, RULE_OPERATORS } from "./rules.js";
import { SECTIONS as EVENT_TYPES } from "./sections.js";
import { SEVERITIES } from "./severity.js";

/** A competitor's own fields, as the listing and the one-competitor answer both show them. */
const CompetitorFields = {
  id: z.string().openapi({ example: "comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
  domain: z.string().openapi({ example: "acme.com" }),
  name: z.string().openapi({ description: "The domain" }),
  companyName: z.string().nullable().openapi({
    description:
      "The company's name as its own site states it (organisation data, site name, title, copyright line); null until a check finds one",
    example: "Acme",
  }),
  homepage: z.string().nullable().openapi({
    description: "Where checks start when a URL was given; otherwise https://{domain}/",
  }),
  createdAt: z.string().openapi({ format: "date-time" }),
  lastAnalyzedAt: z.string().nullable().openapi({ format: "date-time" }),
  cadence: z.enum(CADENCES).openapi({
    description:
      "How often the scheduled sweep checks it: `hourly`, `daily` (the default) or `weekly`, at an hour of the day or week of its own",
  }),
  render: RenderSchema,
};

const CadenceInput = z.enum(CADENCES).openapi({
  description: `How often the scheduled sweep checks the competitor (\`${DEFAULT_CADENCE}\` by default). Each check counts against the daily \`competitor_checks\` quota; past it, scheduled checks are skipped`,
});

export const CompetitorSchema = z.strictObject(CompetitorFields).openapi("Competitor");

const CheckResultSchema = z
  .strictObject({
    result: z.strictObject({
      ok: z.boolean().openapi({ description: "False when the site could not be read" }),
      changed: z.boolean().openapi({ description: "True when change events were recorded" }),
      summary: z.string(),
    }),
  })
  .openapi("CompetitorCheckResult");

const ChangeValuesSchema = z
  .strictObject({
    plan: z.string().optional(),
    amount: z.number().nullable().optional(),
    currency: z.string().nullable().optional(),
    period: z.string().nullable().optional(),
    perSeat: z.boolean().optional(),
    contactSales: z.boolean().optional(),
    roles: z.array(z.string()).optional().openapi({ description: "Role titles" }),
    department: z.string().optional(),
    location: z.string().optional(),
    closedDepartments: z.array(z.string()).optional(),
    title: z.string().nullable().optional(),
    url: z.string().optional(),
    date: z.string().nullable().optional(),
    headline: z.string().nullable().optional(),
    claims: z.array(z.string()).optional(),
  })
  .openapi("ChangeValues", {
    description:
      "One side of a change: a plan's price (plan, amount, currency, period, perSeat, contactSales), roles (titles, department, location), a post or page (title, url, date), the homepage (headline, claims); only the fields of its kind",
  });

const TypedChangeSchema = z
  .strictObject({
    kind: z.enum(CHANGE_KINDS),
    subject: z.string(),
    url: z.string().nullable(),
    before: ChangeValuesSchema.nullable(),
    after: ChangeValuesSchema.nullable(),
    percentChange: z.number().nullable().openapi({
      description: "A price move in percent of the old price, negative for a cut; null otherwise",
    }),
    confidence: z.number().min(0).max(1).openapi({
      description:
        "How sure the extraction is: pricing, the share of the known plans found again; roles, 1 from a job board's JSON and 0.8 from page markup; posts and messaging, 1",
    }),
    count: z.number().int().min(1).openapi({
      description:
        "Changes the event stands for: more than 1 on the one event that folds a check's changes of a kind past its bound",
    }),
    subjects: z
      .array(z.string())
      .optional()
      .openapi({ description: "The folded changes' subjects (20 at most)" }),
  })
  .openapi("CompetitorChange", { description: "What changed, as typed fields" });

export const EventSchema = z
  .strictObject({
    id: z.string().openapi({ example: "evt_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
    competitorId: z.string(),
    competitorDomain: z.string(),
    type: z.enum(EVENT_TYPES),
    severity: z.enum(SEVERITIES),
    title: z.string(),
    aiBrief: z.string(),
    details: z
      .strictObject({
        change: z.string().openapi({ example: "price_increased" }),
        subject: z.string(),
        before: z.unknown(),
        after: z.unknown(),
        url: z.string().nullable(),
        percent: z.number().nullable().optional(),
        closedTeams: z.array(z.string()).optional(),
      })
      .openapi({
        description:
          "What changed, with the values before and after, untyped: `change` holds the same as typed fields",
      }),
    change: TypedChangeSchema,
    alert: z.boolean().openapi({
      description: "The workspace's alert rules notify about it (every event while it has none)",
    }),
    alertRules: z.array(z.string()).openapi({ description: "The alert rules it matched, by id" }),
    isRead: z.boolean(),
    isActioned: z.boolean(),
    detectedAt: z.string().openapi({ format: "date-time" }),
    screenshots: z
      .strictObject({
        before: z.string().nullable().openapi({
          description: "The section's page as the snapshot before the change showed it",
          example:
            "/api/intel/competitors/comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R/screenshots/shot_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
        }),
        after: z.string().nullable().openapi({
          description: "The section's page as this check saw it",
        }),
      })
      .openapi({
        description:
          "Screenshots of the page the event's section was read from, as URLs of `GET /api/intel/competitors/{id}/screenshots/{shotId}` (a JPEG of the page's top 3000 px). Null where none was taken: checks take them where a browser is available, and events before screenshots have none. They expire with the competitor's snapshots (`SNAPSHOT_RETENTION_DAYS`)",
      }),
  })
  .openapi("CompetitorEvent");

const idParams = (example: string) =>
  z.object({ id: z.string().openapi({ param: { name: "id", in: "path" }, example }) });
const CompetitorId = idParams("comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R");
const EventId = idParams("evt_01JD3Q8Y5V2N6W3KX9T7M4PZ8R");

const tags = ["Competitors"];

/** An instant of a query (ISO 8601 with a zone), compared as UTC. */
const instantParam = (description: string) =>
  z
    .string()
    .max(40)
    .datetime({ offset: true })
    .transform((value) => new Date(value).toISOString())
    .optional()
    .openapi({
      type: "string",
      format: "date-time",
      maxLength: 40,
      pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}",
      example: "2026-01-01T00:00:00Z",
      description,
    });

export const createCompetitor = createRoute({
  operationId: "createCompetitor",
  method: "post",
  path: "/api/intel/competitors",
  tags,
  summary: "Track a competitor",
  description:
    "`domain` is a bare domain or a URL. It is normalised (lowercase, punycode; scheme, path and a leading `www.` dropped; a non-default port kept) and a workspace tracks each normalised domain once (409 `conflict`), and at most `MAX_COMPETITORS_PER_WORKSPACE` competitors (100 by default; 409 `limit_reached` beyond, until one is deleted). When a URL is given, its scheme and path are the homepage checks start from.",
  request: {
    headers: IdempotencyHeaders,
    query: NoQuery,
    body: jsonBody(
      z.strictObject({
        domain: z.string().max(2048).openapi({ example: "https://www.acme.com/" }),
        cadence: CadenceInput.optional(),
        render: RenderSchema.optional(),
      }),
    ),
  },
  responses: {
    201: jsonResponse(CompetitorSchema, "Tracked"),
    ...idempotencyErrors,
    409: jsonResponse(
      ErrorSchema,
      "The domain is tracked already (`conflict`), the workspace holds its cap of competitors (`limit_reached`, `MAX_COMPETITORS_PER_WORKSPACE`, 100 by default; `details.cap`, `details.limit`; nothing is created), or a request with this `Idempotency-Key` is still being answered (`idempotency_key_in_use`)",
    ),
    ...commonErrors,
  },
});

export const listCompetitors = createRoute({
  operationId: "listCompetitors",
  method: "get",
  path: "/api/intel/competitors",
  tags,
  summary: "List tracked competitors, newest first",
  request: { query: z.strictObject({ limit: limitParam(50, 100), cursor: cursorParam }) },
  responses: {
    200: jsonResponse(pageOf("competitors", CompetitorSchema), "One page of competitors"),
    ...commonErrors,
  },
});

const PlanSchema = z.strictObject({
  name: z.string(),
  price: z.number().nullable(),
  currency: z.string().nullable(),
  period: z.string().nullable(),
  perSeat: z.boolean(),
  contactSales: z.boolean(),
  priceText: z.string().openapi({ example: "$29 per seat per month" }),
});

const JobSchema = z.strictObject({
  title: z.string(),
  team: z.string().nullable(),
  location: z.string().nullable(),
  url: z.string().nullable(),
});

const PostSchema = z.strictObject({
  title: z.string(),
  url: z.string(),
  date: z.string().nullable(),
});

const PageSeenSchema = z.strictObject({
  url: z.string(),
  lastSeenAt: z.string().openapi({ format: "date-time" }),
});

// Defined whole rather than `CompetitorSchema.extend()`: an extension documents as an `allOf` of
// two closed objects, which no answer matches.
const CompetitorStateSchema = z
  .strictObject({
    ...CompetitorFields,
    pages: z
      .strictObject(Object.fromEntries(EVENT_TYPES.map((s) => [s, PageSeenSchema.optional()])))
      .openapi({
        description:
          "Where each part of the site (pricing, hiring, content, messaging) was last read, and when",
      }),
    snapshot: z
      .strictObject({
        takenAt: z.string().openapi({
          format: "date-time",
          description: "When the site last looked different (unchanged checks keep the snapshot)",
        }),
        homepage: z.string(),
        headline: z.string().nullable(),
        claims: z.array(z.string()),
        plans: z.array(PlanSchema),
        openRoles: z.strictObject({
          count: z.number().int(),
          source: z.string().nullable().openapi({ description: "The job board, or `page`" }),
          roles: z.array(JobSchema).openapi({ description: "Up to 50" }),
        }),
        posts: z.strictObject({
          count: z.number().int(),
          latest: z.array(PostSchema).openapi({ description: "Up to 10, newest first" }),
        }),
      })
      .nullable()
      .openapi({ description: "The latest extracted state of the site; null before a check" }),
  })
  .openapi("CompetitorState");

export const getCompetitor = createRoute({
  operationId: "getCompetitor",
  method: "get",
  path: "/api/intel/competitors/{id}",
  tags,
  summary: "Get one competitor, with what monitoring knows of it",
  description:
    "The competitor, its plans with prices, open roles with team and location, latest posts and homepage headline from the latest snapshot, and when each page was last seen.",
  request: { params: CompetitorId, query: NoQuery },
  responses: {
    200: jsonResponse(CompetitorStateSchema, "The competitor and its state"),
    ...commonErrors,
  },
});

export const deleteCompetitor = createRoute({
  operationId: "deleteCompetitor",
  method: "delete",
  path: "/api/intel/competitors/{id}",
  tags,
  summary: "Stop tracking a competitor",
  description: "Removes the competitor and its snapshots; its events stay listable.",
  request: { params: CompetitorId, query: NoQuery },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

export const updateCompetitor = createRoute({
  operationId: "updateCompetitor",
  method: "patch",
  path: "/api/intel/competitors/{id}",
  tags,
  summary: "Change how often a competitor is checked",
  description:
    "A daily competitor is checked at one hour of the day and a weekly one at one hour of the week, both drawn from its id, so checks spread over the period; an hourly one every hour. A check that comes due while another check of the competitor runs is skipped, not queued behind it.",
  request: {
    params: CompetitorId,
    query: NoQuery,
    body: jsonBody(z.strictObject({ cadence: CadenceInput })),
  },
  responses: { 200: jsonResponse(CompetitorSchema, "The updated competitor"), ...commonErrors },
});

export const checkCompetitor = createRoute({
  operationId: "checkCompetitor",
  method: "post",
  path: "/api/intel/competitors/{id}/check",
  tags,
  summary: "Check a competitor's site for changes now",
  description:
    "Reads the homepage, pricing, careers and blog pages within a bounded number of requests and time, compares them with the last snapshot and records an event per real change. The first check records a baseline. An unreachable site answers `ok: false` with the reason. A 409 while another check of the competitor runs.",
  request: { params: CompetitorId, query: NoQuery },
  responses: {
    200: jsonResponse(CheckResultSchema, "The check's outcome"),
    409: jsonResponse(ErrorSchema, "A check of this competitor is running"),
    ...commonErrors,
  },
});

export const checkAllCompetitors = createRoute({
  operationId: "checkAllCompetitors",
  method: "post",
  path: "/api/intel/competitors/check-all",
  tags,
  summary: "Queue a check of every competitor",
  request: { query: NoQuery },
  responses: {
    202: jsonResponse(
      z.strictObject({ queued: z.number().int().openapi({ description: "Checks queued" }) }),
      "Queued",
    ),
    ...commonErrors,
  },
});

export const listEvents = createRoute({
  operationId: "listEvents",
  method: "get",
  path: "/api/intel/events",
  tags,
  summary: "List competitor change events, newest first",
  request: {
    query: z.strictObject({
      limit: limitParam(20, 100),
      cursor: cursorParam,
      severity: oneOrSeveralParam(z.enum(SEVERITIES), "Only events of these severities"),
      competitorId: oneOrSeveralParam(
        z.string().max(64),
        "Only events of these competitors (their `id`)",
      ),
      type: oneOrSeveralParam(z.enum(EVENT_TYPES), "Only changes of these types"),
      kind: oneOrSeveralParam(z.enum(CHANGE_KINDS), "Only changes of these kinds (`change.kind`)"),
      since: instantParam("Only events detected at or after this instant"),
      until: instantParam("Only events detected before this instant"),
      alert: flagParam(
        "Only events the alert rules notify about (`true`, `1`) or not (`false`, `0`)",
      ),
      isRead: flagParam("Only read (`true`, `1`) or unread (`false`, `0`) events"),
      isActioned: flagParam("Only actioned (`true`, `1`) or not actioned (`false`, `0`) events"),
    }),
  },
  responses: {
    200: jsonResponse(pageOf("events", EventSchema), "One page of events"),
    ...commonErrors,
  },
});

export const patchEvent = createRoute({
  operationId: "updateEvent",
  method: "patch",
  path: "/api/intel/events/{id}",
  tags,
  summary: "Mark an event read or actioned",
  request: {
    params: EventId,
    query: NoQuery,
    body: jsonBody(
      z
        .strictObject({ isRead: z.boolean().optional(), isActioned: z.boolean().optional() })
        .refine((b) => b.isRead !== undefined || b.isActioned !== undefined, {
          message: "Give `isRead`, `isActioned` or both",
        }),
    ),
  },
  responses: { 200: jsonResponse(EventSchema, "The updated event"), ...commonErrors },
});

const SnapshotSchema = CompetitorStateSchema.shape.snapshot.unwrap();

export const competitorHistory = createRoute({
  operationId: "getCompetitorHistory",
  method: "get",
  path: "/api/intel/competitors/{id}/history",
  tags,
  summary: "What a competitor's site showed over time, newest first",
  description:
    "One snapshot per check that saw something new (plans and prices, open roles, latest posts, headline and claims), kept for `SNAPSHOT_RETENTION_DAYS` (365 by default) and then removed. `since` and `until` bound when they were taken.",
  request: {
    params: CompetitorId,
    query: z.strictObject({
      limit: limitParam(20, 100),
      cursor: cursorParam,
      since: instantParam("Only snapshots taken at or after this instant"),
      until: instantParam("Only snapshots taken before this instant"),
    }),
  },
  responses: {
    200: jsonResponse(pageOf("snapshots", SnapshotSchema), "One page of snapshots"),
    ...commonErrors,
  },
});

export const competitorScreenshot = createRoute({
  operationId: "getCompetitorScreenshot",
  method: "get",
  path: "/api/intel/competitors/{id}/screenshots/{shotId}",
  tags,
  summary: "A screenshot a check kept of a competitor's page",
  description:
    "The JPEG an event's `screenshots` links: the top 3000 px of the page, 600 KB at most. Kept for `SNAPSHOT_RETENTION_DAYS` (365 by default), then removed; a screenshot of another workspace is not found.",
  request: {
    params: z.object({
      id: CompetitorId.shape.id,
      shotId: z.string().openapi({
        param: { name: "shotId", in: "path" },
        example: "shot_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
      }),
    }),
    query: NoQuery,
  },
  responses: {
    200: {
      description: "The screenshot",
      content: { "image/jpeg": { schema: z.string().openapi({ format: "binary" }) } },
    },
    ...commonErrors,
  },
});

const PricePointSchema = z.strictObject({
  at: z.string().openapi({ format: "date-time", description: "The snapshot that showed it" }),
  amount: z.number().nullable(),
  currency: z.string().nullable(),
  period: z.string().nullable(),
  perSeat: z.boolean(),
  contactSales: z.boolean(),
});

export const competitorPrices = createRoute({
  operationId: "getCompetitorPrices",
  method: "get",
  path: "/api/intel/competitors/{id}/prices",
  tags,
  summary: "Each plan's price over time",
  description:
    "For every plan a snapshot within the retention listed: a point where it first showed and one per change of its price since, when it was last listed and whether the latest snapshot lists it. Plans in the order the latest snapshot lists them, then those gone.",
  request: { params: CompetitorId, query: NoQuery },
  responses: {
    200: jsonResponse(
      z.strictObject({
        plans: z.array(
          z.strictObject({
            plan: z.string(),
            points: z.array(PricePointSchema),
            lastSeenAt: z.string().openapi({ format: "date-time" }),
            current: z.boolean(),
          }),
        ),
      }),
      "The price series",
    ),
    ...commonErrors,
  },
});

const RuleConditionSchema = z.strictObject({
  field: z.enum(RULE_FIELDS).openapi({
    description:
      "`percent_change` (signed), `abs_percent_change`, `confidence` (0 to 1) or `count` of the event's `change`",
  }),
  op: z.enum(RULE_OPERATORS),
  value: z.number().finite(),
});

const RuleFields = {
  name: z.string().trim().min(1).max(100),
  competitorId: z
    .string()
    .max(64)
    .nullable()
    .default(null)
    .openapi({ description: "Only this competitor's events; null (the default) for all" }),
  types: z.array(z.enum(EVENT_TYPES)).max(EVENT_TYPES.length).default([]).openapi({
    description: "Any of these event types; empty (the default) for any",
  }),
  kinds: z.array(z.enum(CHANGE_KINDS)).max(CHANGE_KINDS.length).default([]).openapi({
    description: "Any of these kinds of change; empty (the default) for any",
  }),
  minSeverity: z.enum(SEVERITIES).nullable().default(null).openapi({
    description: "This severity or above; null (the default) for any",
  }),
  conditions: z.array(RuleConditionSchema).max(5).default([]).openapi({
    description:
      'Every condition must hold, e.g. `{"field": "abs_percent_change", "op": ">=", "value": 10}`; a change without the field fails it',
  }),
  keywords: z.array(z.string().trim().min(1).max(60)).max(20).default([]).openapi({
    description:
      "Any of these words in the names a change brings (new posts, roles, departments, locations, pages, plans), case-insensitive; empty (the default) for any",
  }),
};

const RuleInputSchema = z.strictObject(RuleFields).openapi("AlertRuleInput");

const RuleSchema = z
  .strictObject({
    id: z.string().openapi({ example: "rule_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
    ...RuleFields,
    competitorId: z.string().nullable(),
    types: z.array(z.enum(EVENT_TYPES)),
    kinds: z.array(z.enum(CHANGE_KINDS)),
    minSeverity: z.enum(SEVERITIES).nullable(),
    conditions: z.array(RuleConditionSchema),
    keywords: z.array(z.string()),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("AlertRule");

const ruleTags = ["Alert rules"];
const RuleId = idParams("rule_01JD3Q8Y5V2N6W3KX9T7M4PZ8R");
const RULES_DESCRIPTION =
  "An event notifies (webhooks, channels) and is marked `alert` in the feed when any rule matches it, or always while the workspace has no rule. A rule matches when every criterion it gives holds. Events are recorded whatever the rules say.";

export const listAlertRules = createRoute({
  operationId: "listAlertRules",
  method: "get",
  path: "/api/intel/alert-rules",
  tags: ruleTags,
  summary: "List the workspace's alert rules",
  description: RULES_DESCRIPTION,
  request: { query: NoQuery },
  responses: {
    200: jsonResponse(z.strictObject({ rules: z.array(RuleSchema) }), "The rules, oldest first"),
    ...commonErrors,
  },
});

export const createAlertRule = createRoute({
  operationId: "createAlertRule",
  method: "post",
  path: "/api/intel/alert-rules",
  tags: ruleTags,
  summary: "Add an alert rule",
  description: `${RULES_DESCRIPTION} A workspace holds at most 50 rules (409 \`limit_reached\`).`,
  request: { query: NoQuery, body: jsonBody(RuleInputSchema) },
  responses: {
    201: jsonResponse(RuleSchema, "Added"),
    409: jsonResponse(ErrorSchema, "The workspace holds 50 rules (`limit_reached`)"),
    ...commonErrors,
  },
});

export const deleteAlertRule = createRoute({
  operationId: "deleteAlertRule",
  method: "delete",
  path: "/api/intel/alert-rules/{id}",
  tags: ruleTags,
  summary: "Remove an alert rule",
  request: { params: RuleId, query: NoQuery },
  responses: { 204: { description: "Removed" }, ...commonErrors },
});

export const testAlertRule = createRoute({
  operationId: "testAlertRule",
  method: "post",
  path: "/api/intel/alert-rules/test",
  tags: ruleTags,
  summary: "Which recent events a rule would have sent",
  description:
    "Matches a rule, as it would be created, against the workspace's latest events (`limit`, 100 by default and at most) without saving it.",
  request: {
    query: NoQuery,
    body: jsonBody(
      z.strictObject({
        rule: RuleInputSchema,
        limit: z.number().int().min(1).max(100).default(100),
      }),
    ),
  },
  responses: {
    200: jsonResponse(
      z.strictObject({
        checked: z.number().int().openapi({ description: "Events matched against" }),
        matched: z
          .array(EventSchema)
          .openapi({ description: "Those the rule matches, newest first" }),
      }),
      "The events the rule would have sent",
    ),
    ...commonErrors,
  },
});

export const competitorsContract = [
  createCompetitor,
  listCompetitors,
  checkAllCompetitors,
  getCompetitor,
  updateCompetitor,
  deleteCompetitor,
  checkCompetitor,
  listEvents,
  patchEvent,
  competitorHistory,
  competitorPrices,
  listAlertRules,
  createAlertRule,
  testAlertRule,
  deleteAlertRule,
];
