import type { Document } from "domhandler";
import { prevElementSibling } from "domutils";
import {
  all,
  attr,
  closest,
  type Element,
  first,
  type HtmlPage,
  isInside,
  jsonLdOfType,
  parentOf,
  resolveUrl,
  tag,
  textOf,
} from "./html.js";

/** One open position. `team` is the department or team the board files it under. */
export interface JobPosting {
  title: string;
  team: string | null;
  location: string | null;
  url: string | null;
}

export const jobKey = (job: JobPosting) =>
  [job.title, job.team ?? "", job.location ?? ""]
    .map((part) => part.toLowerCase().trim())
    .join("|");

/** Paths under which sites list single positions (`/careers/senior-engineer`). */
const POSTING_PATH = /\/(?:careers?|jobs?|positions?|openings?|vacanc(?:y|ies)|roles?)\/[^/?#]+/i;
const LOCATION_CLASS = /location|place|city|office/i;
/** A class naming a role's team: `team`, `job-team`, `department_name` (one word of it). */
const TEAM_CLASS = /(?:^|[\s_-])(?:team|department|dept|category|function)(?:$|[\s_-])/i;
/** Data attributes boards put on a posting's element: `data-team`, `data-department`, ... */
const TEAM_DATA = ["data-team", "data-department", "data-dept", "data-category", "data-function"];
const LOCATION_DATA = ["data-location", "data-office", "data-city"];

const stringOf = (value: unknown): string | null =>
  typeof value === "string" && value.trim() ? value.trim() : null;

/** `jobLocation` of schema.org JobPosting: a Place (or a list of them) with a PostalAddress. */
function placeOf(value: unknown): string | null {
  const place = (Array.isArray(value) ? value[0] : value) as Record<string, unknown> | undefined;
  const address = place?.address as Record<string, unknown> | string | undefined;
  if (typeof address === "string") return stringOf(address);
  const parts = [address?.addressLocality, address?.addressRegion, address?.addressCountry]
    .map((part) =>
      stringOf(typeof part === "object" && part ? (part as { name?: unknown }).name : part),
    )
    .filter((part): part is string => part !== null);
  return parts.length > 0 ? parts.join(", ") : null;
}

function fromJsonLd(page: HtmlPage): JobPosting[] {
  return jsonLdOfType(page, "JobPosting").flatMap((node) => {
    const title = stringOf(node.title);
    if (!title) return [];
    return [
      {
        title,
        team: stringOf(node.occupationalCategory) ?? stringOf(node.industry),
        location:
          placeOf(node.jobLocation) ?? (node.jobLocationType === "TELECOMMUTE" ? "Remote" : null),
        url: stringOf(node.url),
      },
    ];
  });
}

const isTeamHeading = tag("h2", "h3", "h4");
const hasLocationClass = (el: Element) => LOCATION_CLASS.test(attr(el, "class"));
const hasTeamClass = (el: Element) => TEAM_CLASS.test(attr(el, "class"));

/** The first of these data attributes set on the element or its ancestors up to the item. */
function dataOf(el: Element, item: Element, names: string[]): string | null {
  for (let node: Element | null = el; node; node = parentOf(node)) {
    const value = names.map((name) => attr(node as Element, name).trim()).find(Boolean);
    if (value) return value;
    if (node === item) break;
  }
  return null;
}
const isTitle = (el: Element) => tag("h3", "h4", "strong")(el) || /title/i.test(attr(el, "class"));

/** The nearest heading before an element in its list: how careers pages group roles by team. */
function teamOf(el: Element, section: Element | Document): string | null {
  for (let node: Element | null = el; node && node !== section; node = parentOf(node)) {
    for (let prev = prevElementSibling(node); prev; prev = prevElementSibling(prev)) {
      if (isTeamHeading(prev)) return textOf(prev) || null;
    }
  }
  return null;
}

/**
 * Job postings of a careers page: its schema.org JobPosting data when present, otherwise the links
 * that point at single positions, with the team heading above them and a location label beside.
 */
export function extractJobs(page: HtmlPage): JobPosting[] {
  const structured = fromJsonLd(page);
  if (structured.length > 0) return structured;
  const pagePath = new URL(page.url).pathname.replace(/\/$/, "");
  const main = first(page.root, tag("main")) ?? page.root;
  const jobs = new Map<string, JobPosting>();
  for (const anchor of all(main, tag("a"))) {
    const url = resolveUrl(attr(anchor, "href"), page.url);
    const path = url ? new URL(url).pathname.replace(/\/$/, "") : "";
    if (!url || jobs.has(url) || !POSTING_PATH.test(path) || path === pagePath) continue;
    const item = closest(anchor, tag("li", "article", "tr")) ?? anchor;
    const location = first(item, hasLocationClass);
    const teamLabel = first(item, hasTeamClass);
    const titleEl = first(anchor, isTitle);
    let title = textOf(titleEl ?? anchor);
    for (const label of [location, teamLabel]) {
      if (!titleEl && label && isInside(label, anchor)) {
        title = title.replace(textOf(label), "").trim();
      }
    }
    if (title.length < 3 || title.length > 120) continue;
    jobs.set(url, {
      title,
      // Markup says it best (a team label, a data attribute); else the heading the role is under.
      team:
        (teamLabel && textOf(teamLabel)) || dataOf(anchor, item, TEAM_DATA) || teamOf(item, main),
      location: (location && textOf(location)) || dataOf(anchor, item, LOCATION_DATA) || null,
      url,
    });
  }
  return [...jobs.values()];
}
