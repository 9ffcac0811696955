import type { BriefWriter } from "../competitors/brief.js";
import type { Config } from "../config.js";
import { BrandProfiles } from "../intel/brand/profiles.js";
import { modelBriefWriter } from "../intel/competitor-brief.js";
import type { Quotas } from "../limits/quotas.js";
import type { Table } from "../store/table.js";
import { llmOf } from "./llm.js";

/**
 * The model's brief writer for the functions that check competitors (the competitors API and the
 * check worker), when a model is configured; without one, events keep the rule-based brief.
 */
export function briefWriterOf(
  config: Config,
  table: Table,
  quotas: Quotas,
): BriefWriter | undefined {
  const { chat } = llmOf(config);
  if (!chat.available) return undefined;
  return modelBriefWriter({ llm: chat, brands: new BrandProfiles(table), quotas });
}
