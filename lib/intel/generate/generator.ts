import type { z } from "@hono/zod-openapi";
import { toDisplayText } from "../../display-text.js";
import { DomainError, invalid } from "../../errors.js";
import type { FilterExpression } from "../../knowledge/retrieval/filter-expression.js";
import type { Retriever, SearchResult } from "../../knowledge/retrieval/retrieval.js";
import type { Quotas } from "../../limits/quotas.js";
import type { LlmClient } from "../../llm/client.js";
import { llmUnavailable } from "../../llm/errors.js";
import { generateObject } from "../../llm/structured.js";
import type { ArtifactDraft, Artifacts } from "../artifacts/artifacts.js";
import type { BrandProfile, BrandProfiles } from "../brand/profiles.js";
import { type Citation, CitationMarkers, citationsFor } from "../citations.js";
import { type CompetitorIntel, competitorSection } from "../competitor-context.js";
import type { IntelModule, Need } from "../modules/module.js";
import {
  brandSection,
  type ContextBudget,
  fitPassages,
  PromptData,
  passagesSection,
} from "../prompts.js";

/** What a module answered, and the same as an artifact ready for `POST /api/artifacts`. */
export interface IntelAnswer<N extends string = string, I = unknown, O = unknown> {
  module: N;
  output: O;
  citations: Citation[];
  artifact: { module: N; title: string; inputs: I; output: O; citations: Citation[] };
  /** Soft limits of the output the answer did not meet (it is kept, and cut where too long). */
  warnings: string[];
  /** The stored artifact's id, when the request asked to save it. */
  artifactId?: string;
}

export interface IntelDeps {
  retriever: Retriever;
  brands: BrandProfiles;
  llm: LlmClient;
  competitors: CompetitorIntel;
  /** Each generation takes one of the workspace's daily model calls (a repair is part of it). */
  quotas: Quotas;
  /** Where `save: true` stores the answer's artifact. */
  artifacts: Artifacts;
}

const brandProfileMissing = () =>
  new DomainError(
    "brand_profile_missing",
    "Intel is grounded in the brand profile, and none is saved: save one with PUT /api/brand first",
  );

function systemPrompt(module: IntelModule, data: PromptData): string {
  return [
    "You are a senior B2B marketing strategist working for the marketing team of the brand described in the brand profile.",
    "",
    "## Task",
    ...module.instructions.map((line) => `- ${line}`),
    "",
    "## Grounding",
    '- Build on the brand profile, the knowledge base passages, any tracked competitor data and the request. Where they are silent, reason as an experienced practitioner would, but never invent facts: no made-up customers, numbers, prices, competitor claims or quotes from real people. Write "unknown" rather than guess a fact.',
    '- After a statement drawn from a passage, cite the passage\'s number in square brackets inside the same text, e.g. "Reporting takes days [2]". Cite only the numbered passages given; the brand profile and the request need no citation.',
    "- Be specific and brief: short, concrete phrases, not paragraphs, so the whole answer fits the output limit.",
    "- Write in the brand's tone of voice when the profile gives one.",
    "- Answer with one JSON object that follows the schema.",
    "",
    data.rules(),
  ].join("\n");
}

/** A module's inputs with what the request left out filled in, and how each was found. */
interface Filled {
  input: Record<string, unknown>;
  /** Fields taken from the brand profile, and which of its fields each is. */
  fromBrand: Map<string, string>;
  /** Fields the model is to infer. */
  inferred: string[];
}

/** Fills the inputs a module needs from the brand profile; the rest are to be inferred. */
function fill(needs: Need<never>[], input: object, brand: BrandProfile): Filled {
  const filled: Filled = { input: { ...input }, fromBrand: new Map(), inferred: [] };
  for (const need of needs) {
    if (filled.input[need.field] !== undefined) continue;
    const found = need.fromBrand?.(brand);
    if (found) {
      filled.input[need.field] = found.value;
      filled.fromBrand.set(need.field, found.from);
    } else filled.inferred.push(need.field);
  }
  return filled;
}

/** Refuses a request missing an input that neither the brand profile nor the passages give. */
function refuseUnderivable(needs: Need<never>[], filled: Filled, passages: number): void {
  for (const need of needs) {
    if (!filled.inferred.includes(need.field)) continue;
    if (need.otherwise === "infer" || (need.otherwise === "infer_from_passages" && passages > 0))
      continue;
    const message = `\`${need.field}\` is needed and cannot be derived from the brand profile or the knowledge base: ${need.hint}`;
    throw invalid(message, { issues: [{ path: need.field, message }] });
  }
}

/**
 * The inputs as the request the model answers: the caller's own words, like a chat question; an
 * input taken from the brand profile is named, its text staying in the profile's data block.
 */
function requestSection(module: IntelModule, filled: Filled): string {
  const lines = Object.entries(filled.input)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => {
      const from = filled.fromBrand.get(key);
      if (from) return `- ${key}: not given; take the brand profile's ${from}`;
      return `- ${key}: ${Array.isArray(value) ? value.join("; ") : String(value)}`;
    });
  const inferred = filled.inferred.map(
    (key) => `- ${key}: not given; choose what fits best from the brand profile and the passages`,
  );
  return `Request (${module.name}):\n${[...lines, ...inferred].join("\n")}`;
}

/**
 * Turns the model's `[n]` passage markers, in every text of the answer, into citation numbers:
 * `[k]` refers to the k-th entry of `citations`, numbered in order of first use through the
 * answer, and a number of a passage that was not given is dropped. Chat's rules exactly, so a
 * citation can only name a chunk the model saw, with a quote taken from that chunk.
 */
function cite<T>(output: T, passages: SearchResult[]): { output: T; citations: Citation[] } {
  const markers = new CitationMarkers(passages.length);
  const texts: string[] = [];
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") {
      const text = markers.push(value) + markers.flush();
      texts.push(text);
      return text;
    }
    if (Array.isArray(value)) return value.map(walk);
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, walk(v)]));
    }
    return value;
  };
  const cited = walk(output) as T;
  return { output: cited, citations: citationsFor(markers.cited, passages, texts.join("\n")) };
}

/**
 * Runs any intel module: the brand profile, the passages of enabled sources that best match the
 * module's query and, for competitor modules, the tracked competitor's record and recent changes
 * go into the prompt as delimited data; the answer comes back as the module's structured output
 * (one repair attempt on an invalid answer) with its citations.
 *
 * Time budget: the model call, its retries and its repair must end LLM_TIMEOUT_MS (20 s by
 * default, under API Gateway's 29 s) after the request began, or it answers 504
 * `upstream_timeout`; the clock starts before retrieval, so slow retrieval shortens the model's
 * time instead of pushing past the budget. Context is bounded by `context` (and ten competitor
 * events), the answer by the module's `maxTokens`.
 */
export class IntelGenerator {
  constructor(
    private readonly deps: IntelDeps,
    private readonly context: ContextBudget = { passages: 8, chars: 12_000 },
  ) {}

  async generate<N extends string, I extends z.ZodType, O extends z.ZodType>(
    workspaceId: string,
    module: IntelModule<N, I, O>,
    input: z.output<I>,
    options: { save?: boolean | undefined; filters?: FilterExpression | undefined } = {},
  ): Promise<IntelAnswer<N, z.output<I>, z.output<O>>> {
    const { llm, brands, competitors, retriever, quotas } = this.deps;
    if (!llm.available) throw llmUnavailable();
    // A generation to save, refused at the artifacts cap, spends no model call.
    if (options.save) await this.deps.artifacts.ensureRoom(workspaceId);
    const deadline = Date.now() + llm.timeoutMs;
    const ref = module.competitor?.(input);
    const [brand, tracked] = await Promise.all([
      brands.get(workspaceId),
      ref ? competitors.find(workspaceId, ref) : undefined,
    ]);
    if (!brand) throw brandProfileMissing();
    const needs = (module.needs ?? []) as Need<never>[];
    const filled = fill(needs, input as object, brand);
    const complete = filled.input as z.output<I>;
    const query = module.query(complete, tracked?.competitor);
    const passages = fitPassages(
      await retriever.search(workspaceId, query, this.context.passages, {
        filters: options.filters,
      }),
      this.context,
    );
    refuseUnderivable(needs, filled, passages.length);

    // Charged only once nothing else can refuse the request, right before the model is called.
    await quotas.consume(workspaceId, "model_calls");
    const data = new PromptData();
    const sections = [
      brandSection(data, brand),
      ...(ref ? [competitorSection(data, tracked)] : []),
      passagesSection(data, passages),
      requestSection(module, filled),
    ];
    const { value, warnings } = await generateObject(llm, {
      name: `intel_${module.name}`,
      schema: module.output,
      messages: [
        { role: "system", content: systemPrompt(module, data) },
        { role: "user", content: sections.join("\n\n") },
      ],
      maxTokens: module.maxTokens,
      deadline,
      operation: `intel.${module.name}`,
    });
    const { output, citations } = cite(value, passages);
    // Made of the inputs and the model's answer: a display string, as POST /api/artifacts requires.
    const title = (toDisplayText(module.title(complete, output)) || module.name)
      .slice(0, 200)
      .trim();
    const artifact = { module: module.name, title, inputs: input, output, citations };
    const answer = { module: module.name, output, citations, artifact, warnings };
    if (!options.save) return answer;
    // Stored as `POST /api/artifacts` stores it (an artifact over its size limit is a 413).
    const saved = await this.deps.artifacts.create(workspaceId, artifact as ArtifactDraft);
    return { ...answer, artifactId: saved.id };
  }
}
