import { z } from "zod";
import type { JobPosting } from "./jobs.js";

/** Applicant tracking systems whose job boards have a public, documented JSON API. */
export type AtsVendor = "greenhouse" | "lever" | "ashby";

export interface AtsBoard {
  vendor: AtsVendor;
  /** The company's board token (Greenhouse), site name (Lever) or organisation (Ashby). */
  token: string;
}

/** Where each vendor's public API lives; tests point these at their fixture server. */
export type AtsApis = Record<AtsVendor, string>;

export const PUBLIC_ATS_APIS: AtsApis = {
  greenhouse: "https://boards-api.greenhouse.io",
  lever: "https://api.lever.co",
  ashby: "https://api.ashbyhq.com",
};

/**
 * Board links, embed scripts and API calls as they appear in careers pages' HTML. The query
 * before Greenhouse's `for=` is read up to 500 characters: unbounded, a page repeating the embed
 * URL would scan to the end of the run from every copy, in quadratic time.
 */
const BOARD_PATTERNS: Array<[AtsVendor, RegExp]> = [
  [
    "greenhouse",
    /(?:boards|job-boards)(?:\.eu)?\.greenhouse\.io\/(?:embed\/job_board(?:\/js)?\?(?:[^"'\s<>]{0,500}?&(?:amp;)?)?for=)?([A-Za-z0-9_-]+)/g,
  ],
  ["greenhouse", /boards-api\.greenhouse\.io\/v1\/boards\/([A-Za-z0-9_-]+)/g],
  ["lever", /jobs\.(?:eu\.)?lever\.co\/([A-Za-z0-9_.-]+)/g],
  ["lever", /api\.(?:eu\.)?lever\.co\/v0\/postings\/([A-Za-z0-9_.-]+)/g],
  ["ashby", /jobs\.ashbyhq\.com\/([A-Za-z0-9_.-]+)/g],
  ["ashby", /api\.ashbyhq\.com\/posting-api\/job-board\/([A-Za-z0-9_.-]+)/g],
];
const NOT_TOKENS = new Set(["embed", "js", "v0", "v1", "api"]);

/** The ATS boards a page links or embeds, once each. */
export function findBoards(html: string): AtsBoard[] {
  const boards = new Map<string, AtsBoard>();
  for (const [vendor, pattern] of BOARD_PATTERNS) {
    for (const match of html.matchAll(pattern)) {
      const token = match[1];
      if (!token || NOT_TOKENS.has(token.toLowerCase())) continue;
      boards.set(`${vendor}:${token.toLowerCase()}`, { vendor, token });
    }
  }
  return [...boards.values()];
}

export function boardApiUrl({ vendor, token }: AtsBoard, apis: AtsApis): string {
  const base = apis[vendor].replace(/\/$/, "");
  const name = encodeURIComponent(token);
  switch (vendor) {
    case "greenhouse":
      // The departments listing carries each job's team, which the jobs listing only gives with
      // every job's full description.
      return `${base}/v1/boards/${name}/departments`;
    case "lever":
      return `${base}/v0/postings/${name}?mode=json`;
    case "ashby":
      return `${base}/posting-api/job-board/${name}`;
  }
}

const text = z
  .string()
  .nullish()
  .transform((v) => v?.trim() || null);

const Greenhouse = z.object({
  departments: z.array(
    z.object({
      name: text,
      jobs: z.array(
        z.object({
          title: z.string(),
          location: z.object({ name: text }).nullish(),
          absolute_url: text,
        }),
      ),
    }),
  ),
});

const Lever = z.array(
  z.object({
    text: z.string(),
    hostedUrl: text,
    categories: z.object({ team: text, department: text, location: text }).partial().nullish(),
  }),
);

const Ashby = z.object({
  jobs: z.array(
    z.object({
      title: z.string(),
      department: text,
      team: text,
      location: text,
      jobUrl: text,
      isListed: z.boolean().nullish(),
    }),
  ),
});

/** Job postings from a board's API answer; throws when the answer is not the vendor's shape. */
export function parseBoard(vendor: AtsVendor, json: unknown): JobPosting[] {
  switch (vendor) {
    case "greenhouse":
      return Greenhouse.parse(json).departments.flatMap((department) =>
        department.jobs.map((job) => ({
          title: job.title.trim(),
          // Greenhouse files unassigned jobs under a "No Department" department.
          team: department.name === "No Department" ? null : department.name,
          location: job.location?.name ?? null,
          url: job.absolute_url,
        })),
      );
    case "lever":
      return Lever.parse(json).map((job) => ({
        title: job.text.trim(),
        team: job.categories?.team ?? job.categories?.department ?? null,
        location: job.categories?.location ?? null,
        url: job.hostedUrl,
      }));
    case "ashby":
      return Ashby.parse(json)
        .jobs.filter((job) => job.isListed !== false)
        .map((job) => ({
          title: job.title.trim(),
          team: job.team ?? job.department,
          location: job.location,
          url: job.jobUrl,
        }));
  }
}
