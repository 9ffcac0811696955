import { Competitors } from "../competitors/competitors.js";
import { Events } from "../competitors/events.js";
import { Snapshots } from "../competitors/snapshot.js";
import type { Config } from "../config.js";
import { Artifacts } from "../intel/artifacts/artifacts.js";
import { Battlecards } from "../intel/battlecard/battlecards.js";
import { BrandProfiles } from "../intel/brand/profiles.js";
import { GroundedChat } from "../intel/chat/grounded-chat.js";
import { CompetitorIntel } from "../intel/competitor-context.js";
import { IntelGenerator } from "../intel/generate/generator.js";
import { apiBase } from "./api-base.js";
import { llmOf } from "./llm.js";
import { retrieverOf } from "./retriever.js";

/**
 * intel-api: brand profile, grounded chat, intel modules, artifacts, competitors' battlecards and
 * quota usage.
 */
export function intelServices(config: Config) {
  const shared = apiBase(config);
  const { stores, quotas, caps } = shared;
  const llm = llmOf(config);
  const retriever = retrieverOf(config, stores, llm);
  const brands = new BrandProfiles(stores.table);
  const artifacts = new Artifacts(stores.table, caps);
  const tracked = {
    competitors: new Competitors({ table: stores.table }),
    events: new Events(stores.table),
    snapshots: new Snapshots(stores.blobs),
  };
  return {
    ...shared,
    brands,
    chat: new GroundedChat({ retriever, brands, llm: llm.chat, quotas }),
    intel: new IntelGenerator({
      retriever,
      brands,
      llm: llm.chat,
      competitors: new CompetitorIntel(tracked),
      quotas,
      artifacts,
    }),
    artifacts,
    // Here rather than in competitors-api, which holds no search engine: a card quotes the
    // knowledge base and the saved analyses beside the tracked data (decision 0021).
    battlecards: new Battlecards({ ...tracked, brands, artifacts, retriever }),
  };
}
