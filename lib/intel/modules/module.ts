import type { z } from "@hono/zod-openapi";
import type { BrandProfile } from "../brand/profiles.js";

/** Which tracked competitor a request names: by id, or by the domain the caller typed. */
export interface CompetitorRef {
  competitorId?: string | undefined;
  domain?: string | undefined;
}

/**
 * An input a module cannot do without, and where it comes from when the request leaves it out:
 * the brand profile's value, else the model infers it (from the brand profile, or only when
 * knowledge base passages matched), else the request is refused naming the field.
 */
export interface Need<I> {
  field: keyof I & string;
  /**
   * The profile's value (for the search query and the title) and which of its fields it is: the
   * prompt names the field rather than repeat its text, which stays in the profile's data block.
   */
  fromBrand?(brand: BrandProfile): BrandValue | undefined;
  otherwise: "infer" | "infer_from_passages" | "refuse";
  /** What to send or save instead, for the refusal's message. */
  hint: string;
}

export interface BrandValue {
  value: string;
  /** Which part of the profile, e.g. "audience". */
  from: string;
}

/** A profile field as the value of a need, when the profile has it. */
export const brandValue = (from: string, value: string | undefined): BrandValue | undefined =>
  value ? { value, from } : undefined;

/**
 * One marketing intel module: what it takes, the shape of what it answers, how it searches the
 * knowledge base and what it asks the model. The shared generator (`../generate/generator.ts`) does the
 * rest, so a module is data plus a few small functions.
 */
export interface IntelModule<
  N extends string = string,
  I extends z.ZodType = z.ZodType,
  O extends z.ZodType = z.ZodType,
> {
  name: N;
  /** What it produces, for the API reference. */
  summary: string;
  input: I;
  output: O;
  /**
   * The knowledge base query: the inputs in the words the relevant passages would use, and for
   * competitor modules the tracked competitor they resolved to.
   */
  query(input: z.output<I>, tracked?: { domain: string }): string;
  /** The saved artifact's title. */
  title(input: z.output<I>, output: z.output<O>): string;
  /** The brief, as a practitioner would give it to a strategist; one line each. */
  instructions: string[];
  /** Ceiling on the answer's tokens (LLM_MAX_OUTPUT_TOKENS still applies). */
  maxTokens: number;
  /** Inputs the module needs that the request may leave out (see `Need`). */
  needs?: Need<z.output<I>>[];
  /** For modules about a competitor: the tracked competitor the inputs name. */
  competitor?(input: z.output<I>): CompetitorRef;
}

/** A module's schema in the API reference: `persona` + `Artifact` -> `PersonaArtifact`. */
export const componentName = (module: string, suffix: string) =>
  `${module.charAt(0).toUpperCase()}${module.slice(1)}${suffix}`;

/** Declares a module with its literal name and schema types inferred. */
export const defineModule = <N extends string, I extends z.ZodType, O extends z.ZodType>(
  module: IntelModule<N, I, O>,
) => module;

/** The request's words as a search query: present values, long ones cut. */
export const queryOf = (...parts: Array<string | string[] | undefined>) =>
  parts
    .flat()
    .filter((part): part is string => Boolean(part))
    .map((part) => part.slice(0, 300))
    .join(" ");
