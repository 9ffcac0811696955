import { createRoute, z } from "@hono/zod-openapi";
import { commonErrors, ErrorSchema, jsonBody, jsonResponse, NoQuery } from "../../http/schemas.js";
import { FilterSchema } from "../../knowledge/retrieval/filter-expression.js";
import { draftOf } from "../artifacts/contract.js";
import { ALL_MODULES, MODULE_NAMES } from "../modules/index.js";
import { componentName, type IntelModule } from "../modules/module.js";
import { CitationSchema, modelErrors } from "../schemas.js";

const error = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorSchema } },
});

/** A module's whole answer: its output, the citations its `[n]` markers point at, the artifact. */
const answerOf = <N extends string, I extends z.ZodType, O extends z.ZodType>(
  module: IntelModule<N, I, O>,
) =>
  z
    .strictObject({
      module: z.literal(module.name),
      output: module.output,
      citations: z.array(CitationSchema),
      artifact: draftOf(module),
      artifactId: z.string().optional().openapi({
        description: "The stored artifact's id (`art_...`), when the request had `save: true`",
      }),
      warnings: z.array(z.string()).openapi({
        description:
          "Soft limits of the output the model's answer did not meet, e.g. fewer items than asked; the answer is kept, and cut where it was too long",
      }),
    })
    .openapi(componentName(module.name, "Answer"));

/** Asks to store the answer's artifact in the same request. */
const save = z.boolean().optional().openapi({
  description:
    "Store the answer's artifact as `POST /api/artifacts` would, and answer its id as `artifactId`",
});

/** A module's request body: its inputs, `save`, and `filters` over the sources it grounds in. */
export const requestOf = <N extends string, I extends z.ZodType, O extends z.ZodType>(
  module: IntelModule<N, I, O>,
) =>
  (module.input as unknown as z.ZodObject)
    .safeExtend({ save, filters: FilterSchema.optional() })
    .openapi(componentName(module.name, "Request"));

/**
 * One module's route, as the intel app registers it so each body is validated against its own
 * module's input schema. The reference and API Gateway know them as the one `{module}` route.
 */
export const moduleRoute = <N extends string, I extends z.ZodType, O extends z.ZodType>(
  module: IntelModule<N, I, O>,
) =>
  createRoute({
    method: "post",
    path: `/api/intel/${module.name}`,
    request: { query: NoQuery, body: jsonBody(requestOf(module)) },
    responses: { 200: jsonResponse(answerOf(module), module.summary) },
  });

export const generateIntel = createRoute({
  operationId: "generateIntel",
  method: "post",
  path: "/api/intel/{module}",
  tags: ["Intel"],
  summary: "Generate marketing intel: persona, competitor, gtm, journey, messaging or kpi",
  description: [
    "The body is the module's inputs (`PersonaInput`, `CompetitorInput`, ...); the answer's `output` follows the module's output schema.",
    "Generation is grounded in the brand profile and in the passages of enabled sources that best match the inputs, which the output cites as `[n]` (the n-th of `citations`); for `competitor`, a tracked competitor (by `competitorId`, or tracked under `domain`) adds its record and its recent change events.",
    "Every module accepts `segment`, `domain`, `company`, `stage` and `notes` beside its own inputs; what a module needs and the request leaves out is taken from the brand profile (product, audience) or inferred from it and the knowledge base, and only an input that cannot be derived is a 400 naming it. `filters` (as on `POST /api/knowledge/search`) grounds the answer in the matching sources only.",
    "`artifact` can be saved unchanged with `POST /api/artifacts`, or in the same request with `save: true` (the answer then has `artifactId`).",
    "Size limits of an output are soft: an answer of the right shape is kept, cut where it is too long, and `warnings` lists what fell short.",
    "Without a brand profile the answer is a 409 `brand_profile_missing`, never a generic result. Generation ends within the time budget or answers 504.",
  ].join(" "),
  request: {
    params: z.object({
      module: z.string().openapi({
        param: { name: "module", in: "path" },
        enum: MODULE_NAMES,
        example: "persona",
      }),
    }),
    query: NoQuery,
    body: jsonBody(z.union(ALL_MODULES.map(requestOf))),
  },
  responses: {
    200: jsonResponse(
      z.union(ALL_MODULES.map(answerOf)),
      "The module's output, its citations, and the artifact to save",
    ),
    ...commonErrors,
    404: error(
      "`not_found`: an unknown module (`details.modules` lists the valid ones), or an unknown `competitorId`",
    ),
    409: error(
      "`brand_profile_missing`: save a brand profile with `PUT /api/brand` first; or, with `save`, `limit_reached`: the workspace holds its cap of saved artifacts (checked before the model is asked)",
    ),
    ...modelErrors,
  },
});

export const generateContract = [generateIntel];
