import { createRoute, z } from "@hono/zod-openapi";
import { ExportQuery, exportAnswer } from "../../files/export-file.js";
import {
  capErrors,
  commonErrors,
  cursorParam,
  displayText,
  IdempotencyHeaders,
  jsonBody,
  jsonResponse,
  limitParam,
  NoQuery,
  oneOrSeveralParam,
  pageOf,
} from "../../http/schemas.js";
import { relaxed } from "../../llm/soft-limits.js";
import { INTEL_MODULES, MODULE_NAMES } from "../modules/index.js";
import { componentName, type IntelModule } from "../modules/module.js";
import { CitationSchema } from "../schemas.js";

/**
 * Largest artifact, in bytes of JSON. Generated ones are ~5-15 KB; the cap leaves room for edited
 * ones while keeping every artifact one DynamoDB item (400 KB at most, attribute names included),
 * so a read is one request and the intel function needs no bucket writes.
 */
export const MAX_ARTIFACT_BYTES = 256 * 1024;

const title = displayText(200, "The artifact's name in lists").openapi({
  example: "Persona: Growth-lead Grace",
});

/** The fields of one module's artifact, as a client sends it and as it is saved. */
const draftFields = <N extends string, I extends z.ZodType, O extends z.ZodType>(
  module: IntelModule<N, I, O>,
) => ({
  module: z.literal(module.name),
  title,
  inputs: module.input,
  // Limits of a generated answer are soft (lib/llm/structured.ts): what one kept saves too.
  output: relaxed(module.output),
  citations: z.array(CitationSchema).max(50),
});

/**
 * One module's artifact, validated with the module's own input and output schemas so a saved
 * artifact is always one the module could have produced. (Built twice for a module, it is still
 * one component of the reference: components are keyed by name.)
 */
export const draftOf = <N extends string, I extends z.ZodType, O extends z.ZodType>(
  module: IntelModule<N, I, O>,
) => z.strictObject(draftFields(module)).openapi(componentName(module.name, "Artifact"));

const [persona, competitor, gtm, journey, messaging, kpi] = INTEL_MODULES;

export const ArtifactDraftSchema = z
  .discriminatedUnion("module", [
    draftOf(persona),
    draftOf(competitor),
    draftOf(gtm),
    draftOf(journey),
    draftOf(messaging),
    draftOf(kpi),
  ])
  .openapi("ArtifactDraft");

/** What saving adds to a draft. */
const ArtifactMeta = {
  id: z.string().openapi({ example: "art_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
  createdAt: z.string().openapi({ format: "date-time" }),
  updatedAt: z.string().openapi({ format: "date-time" }),
};

/**
 * One module's saved artifact, defined whole: an intersection of the draft and the saved fields
 * documents as an `allOf` of closed objects, which no artifact matches.
 */
const savedOf = <N extends string, I extends z.ZodType, O extends z.ZodType>(
  module: IntelModule<N, I, O>,
) =>
  z
    .strictObject({ ...ArtifactMeta, ...draftFields(module) })
    .openapi(componentName(module.name, "SavedArtifact"));

export const ArtifactSchema = z
  .discriminatedUnion("module", [
    savedOf(persona),
    savedOf(competitor),
    savedOf(gtm),
    savedOf(journey),
    savedOf(messaging),
    savedOf(kpi),
  ])
  .openapi("Artifact");

const ArtifactSummarySchema = z
  .strictObject({
    ...ArtifactMeta,
    module: z.enum(MODULE_NAMES),
    title: z.string(),
    inputs: z.record(z.string(), z.unknown()),
  })
  .openapi("ArtifactSummary");

const IdParams = z.object({
  id: z
    .string()
    .openapi({ param: { name: "id", in: "path" }, example: "art_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" }),
});

const tags = ["Artifacts"];

export const createArtifact = createRoute({
  operationId: "createArtifact",
  method: "post",
  path: "/api/artifacts",
  tags,
  summary: "Save an intel artifact",
  description: `The body is the \`artifact\` of an intel module's answer, as it came or edited; it must still match the module's schemas. Up to ${MAX_ARTIFACT_BYTES / 1024} KB of JSON (413 beyond). A workspace keeps at most \`MAX_ARTIFACTS_PER_WORKSPACE\` artifacts (10,000 by default; 409 \`limit_reached\` beyond, until one is deleted).`,
  request: { headers: IdempotencyHeaders, query: NoQuery, body: jsonBody(ArtifactDraftSchema) },
  responses: {
    201: jsonResponse(ArtifactSchema, "The saved artifact"),
    ...commonErrors,
    ...capErrors("saved artifacts", "MAX_ARTIFACTS_PER_WORKSPACE"),
  },
});

export const listArtifacts = createRoute({
  operationId: "listArtifacts",
  method: "get",
  path: "/api/artifacts",
  tags,
  summary: "List saved artifacts",
  description:
    "Newest first. Items are summaries without `output` and `citations` (a page of whole artifacts could exceed a response's size limit); get one for the whole.",
  request: {
    query: z.strictObject({
      module: oneOrSeveralParam(z.enum(MODULE_NAMES), "Only these modules' artifacts"),
      limit: limitParam(20, 100),
      cursor: cursorParam,
    }),
  },
  responses: {
    200: jsonResponse(
      pageOf("artifacts", ArtifactSummarySchema).openapi("ArtifactList"),
      "A page of artifacts",
    ),
    ...commonErrors,
  },
});

export const getArtifact = createRoute({
  operationId: "getArtifact",
  method: "get",
  path: "/api/artifacts/{id}",
  tags,
  summary: "Get a saved artifact",
  request: { params: IdParams, query: NoQuery },
  responses: { 200: jsonResponse(ArtifactSchema, "The artifact"), ...commonErrors },
});

export const patchArtifact = createRoute({
  operationId: "updateArtifact",
  method: "patch",
  path: "/api/artifacts/{id}",
  tags,
  summary: "Rename a saved artifact",
  description: "Only the title changes; an artifact's content is what the module produced.",
  request: { params: IdParams, query: NoQuery, body: jsonBody(z.strictObject({ title })) },
  responses: { 200: jsonResponse(ArtifactSchema, "The renamed artifact"), ...commonErrors },
});

export const deleteArtifact = createRoute({
  operationId: "deleteArtifact",
  method: "delete",
  path: "/api/artifacts/{id}",
  tags,
  summary: "Delete a saved artifact",
  request: { params: IdParams, query: NoQuery },
  responses: { 204: { description: "Deleted" }, ...commonErrors },
});

export const exportArtifact = createRoute({
  operationId: "exportArtifact",
  method: "get",
  path: "/api/artifacts/{id}/export",
  tags,
  summary: "Download a saved artifact as Markdown or DOCX",
  description:
    "The artifact's title and output as a document: keys become headings, lists bullets. The file is named after the title.",
  request: { params: IdParams, query: ExportQuery },
  responses: { 200: exportAnswer, ...commonErrors },
});

export const artifactsContract = [
  createArtifact,
  listArtifacts,
  getArtifact,
  patchArtifact,
  deleteArtifact,
  exportArtifact,
];
