import { createRoute, z } from "@hono/zod-openapi";
import { ExportQuery, exportAnswer } from "../../files/export-file.js";
import { commonErrors } from "../../http/schemas.js";

/** What a battlecard reads, each part bounded so that a card is one quick request. */
export const BATTLECARD_LIMITS = {
  /** The latest changes listed: as many as fit a page sales reads in a call. */
  events: 10,
  /** The newest competitor analyses looked through for one of this competitor. */
  analyses: 20,
  /** Passages quoted from the knowledge base. */
  passages: 3,
  /** How long the knowledge base may take; past it the card goes without its passages. */
  searchMs: 5_000,
};

const CompetitorId = z.object({
  id: z
    .string()
    .openapi({ param: { name: "id", in: "path" }, example: "comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
});

export const competitorBattlecard = createRoute({
  operationId: "getCompetitorBattlecard",
  method: "get",
  path: "/api/intel/competitors/{id}/battlecard",
  tags: ["Competitors"],
  summary: "Download a competitor's battlecard as Markdown or DOCX",
  description: `What sales opens in a call: the competitor's headline, claims and plans from the latest snapshot, the brand profile's differentiators and plans beside them, the latest saved \`competitor\` analysis of it (asked about its id, domain or company name: its positioning, strengths, weaknesses, how to win, talking points, landmines and objections), up to ${BATTLECARD_LIMITS.passages} passages of the knowledge base's enabled sources that name it (each with its source's name and address), open roles and posts, and the ${BATTLECARD_LIMITS.events} latest changes. No model is called: it needs no model key and uses no quota. A knowledge base that does not answer within ${BATTLECARD_LIMITS.searchMs / 1000} seconds leaves the passages out, and the card says so.`,
  request: { params: CompetitorId, query: ExportQuery },
  responses: { 200: exportAnswer, ...commonErrors },
});

/** Served by intel-api, beside the analyses and the knowledge base it reads. */
export const battlecardContract = [competitorBattlecard];
