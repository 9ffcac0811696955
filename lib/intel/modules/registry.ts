import { competitor } from "./competitor.js";
import { gtm } from "./gtm.js";
import { journey } from "./journey.js";
import { kpi } from "./kpi.js";
import { messaging } from "./messaging.js";
import type { IntelModule } from "./module.js";
import { persona } from "./persona.js";

/** The marketing intel modules, in the order the API reference lists them. */
export const INTEL_MODULES = [persona, competitor, gtm, journey, messaging, kpi] as const;

/** The same, for code that treats every module alike (routes, the generator's callers). */
export const ALL_MODULES: readonly IntelModule[] = INTEL_MODULES;

export type IntelModuleName = (typeof INTEL_MODULES)[number]["name"];

export const MODULE_NAMES = INTEL_MODULES.map((m) => m.name) as [
  IntelModuleName,
  ...IntelModuleName[],
];
