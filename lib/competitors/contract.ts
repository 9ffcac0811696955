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
};

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
      .openapi({ description: "What changed, with the values before and after" }),
    isRead: z.boolean(),
    isActioned: z.boolean(),
    detectedAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("CompetitorEvent");

const idParams = (example: string) =>
  z.object({ id: z.string().openapi({ param: { name: "id", in: "path" }, example }) });
const CompetitorId = idParams("comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R");
const EventId = idParams("evt_01JD3Q8Y5V2N6W3KX9T7M4PZ8R");

const tags = ["Competitors"];

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
      type: oneOrSeveralParam(z.enum(EVENT_TYPES), "Only changes of these kinds"),
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

export const competitorsContract = [
  createCompetitor,
  listCompetitors,
  checkAllCompetitors,
  getCompetitor,
  deleteCompetitor,
  checkCompetitor,
  listEvents,
  patchEvent,
];
