import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_KEYS, loadConfig } from "../../lib/config.js";

/**
 * The deploy's settings live in `infra/aws/settings.json`, committed and read at every synth, so
 * a deploy from any shell builds the same stack. An override is explicit, on the command line
 * (`npx cdk deploy -c LLM_MODEL=gpt-4o`); a service variable merely present in the shell is
 * reported and ignored, never picked up or dropped silently.
 */
export const SETTINGS_FILE = join(import.meta.dirname, "settings.json");

/** Settings of the deploy itself, not passed wholesale to the functions. */
const DEPLOY_KEYS = [
  "LLM_API_KEY_SECRET",
  "ALARM_EMAIL",
  "CORS_ORIGINS",
  "STAGE",
  "API_THROTTLE_RATE",
  "API_THROTTLE_BURST",
  "WAF_RATE_LIMIT",
  "WAF_ANONYMOUS_RATE_LIMIT",
  "DELETION_PROTECTION",
  "BACKUPS",
] as const;

/**
 * A stage names one deploy of the stack (`dev`, `prod`, ...): it is in the stack's name and in
 * every name the stack sets, so several stages live side by side in one account and region.
 */
const STAGE = /^[a-z][a-z0-9-]{0,15}$/;

/** Numeric deploy settings: their bounds, and what each is. */
const LIMITS = {
  API_THROTTLE_RATE: { min: 1, max: 10_000, what: "requests per second across the API's stage" },
  API_THROTTLE_BURST: { min: 1, max: 5_000, what: "burst of requests above the stage's rate" },
  // AWS WAF's rate-based rules count from 10 requests per evaluation window.
  WAF_RATE_LIMIT: { min: 10, max: 2_000_000_000, what: "requests per address per 5 minutes" },
  WAF_ANONYMOUS_RATE_LIMIT: {
    min: 10,
    max: 2_000_000_000,
    what: "requests without a bearer key per address per 5 minutes",
  },
} as const;

/** What a deploy gets for the settings the file leaves out. */
const DEFAULTS: Record<keyof typeof LIMITS, number> = {
  API_THROTTLE_RATE: 100,
  API_THROTTLE_BURST: 200,
  // A workspace's own limit (RATE_LIMIT_PER_MINUTE, 600) for 5 minutes, from one address.
  WAF_RATE_LIMIT: 3_000,
  // A page of the console or the docs is a few requests; a script without a key is refused.
  WAF_ANONYMOUS_RATE_LIMIT: 300,
};

/**
 * Service variables the stack decides: its resources' names, the key (a secret, never a setting),
 * the search index's place (the bucket the functions are granted) and local-only switches.
 */
const MANAGED = new Set([
  "TABLE_NAME",
  "BUCKET_NAME",
  "OPENAI_API_KEY",
  "ALLOW_PRIVATE_URLS",
  "SEARCH_INDEX_URI",
  "S3_FORCE_PATH_STYLE",
  "DATA_KEY_ID",
  // Given to the functions that invoke the render function only (functions/manifest.ts).
  "RENDER_FUNCTION_NAME",
]);
const isManaged = (key: string) => MANAGED.has(key) || key.endsWith("_QUEUE_URL");

/** Service variables a deploy may set: every one the functions read, minus the managed ones. */
const SERVICE_KEYS = CONFIG_KEYS.filter(
  (key) => !isManaged(key) && !(DEPLOY_KEYS as readonly string[]).includes(key),
);

export interface DeploySettings {
  /** Service settings every function receives as environment variables. */
  service: Record<string, string>;
  /** Name of the Secrets Manager secret holding the model provider's key. */
  modelKeySecret: string | undefined;
  /** Where alarm notifications are e-mailed (a subscription to confirm once). */
  alarmEmail: string | undefined;
  /** Browser origins allowed to call the API (`*` for any); none by default. */
  corsOrigins: string[];
  /** The deploy's stage (`-c stage=prod`): in the stack's name and every name the stack sets. */
  stage: string;
  /** API Gateway's throttle of the whole stage: requests per second, and the burst above. */
  throttle: { rateLimit: number; burstLimit: number };
  /** AWS WAF's rate-based rules, per source address over 5 minutes: any request, and those without a key. */
  waf: { rateLimit: number; anonymousRateLimit: number };
  /**
   * The table's deletion protection (`DELETION_PROTECTION`) and its AWS Backup plan (`BACKUPS`):
   * both on unless the file or `-c KEY=false` turns one off (a dev stage; docs/operations.md).
   */
  dataProtection: { deletionProtection: boolean; backups: boolean };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * The settings of a deploy: the file's, each overridden by a context value of the same name
 * (`-c KEY=value`). Unknown or malformed settings stop the synth with a message naming them;
 * `warn` hears of service variables set in the environment and ignored.
 */
export function deploySettings(
  file: Record<string, unknown>,
  overrides: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = {},
  warn: (message: string) => void = () => {},
): DeploySettings {
  const known = new Set<string>([...SERVICE_KEYS, ...DEPLOY_KEYS]);
  const merged: Record<string, string> = {};
  for (const [source, values] of [
    ["infra/aws/settings.json", file],
    ["context", overrides],
  ] as const) {
    for (const [given, value] of Object.entries(values)) {
      // `-c stage=prod` reads as CDK's own flags do.
      const key = source === "context" && given === "stage" ? "STAGE" : given;
      if (source === "context" && !known.has(key)) continue; // CDK's own context keys
      if (!known.has(key)) {
        throw new Error(
          `${source}: ${key} is not a deploy setting${isManaged(key) ? " (the stack sets it)" : ""}`,
        );
      }
      if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
        throw new Error(`${source}: ${key} must be a string`);
      }
      merged[key] = String(value);
    }
  }
  const ignored = Object.keys(env).filter(
    (key) => known.has(key) && env[key] !== merged[key] && env[key] !== undefined,
  );
  if (ignored.length > 0) {
    warn(
      `Ignoring ${ignored.join(", ")} from the environment: deploy settings come from ` +
        "infra/aws/settings.json; override one with -c KEY=value.",
    );
  }

  const service = Object.fromEntries(
    Object.entries(merged).filter(([key, value]) => SERVICE_KEYS.includes(key as never) && value),
  );
  const config = checkServiceSettings({ ...service, CORS_ORIGINS: merged.CORS_ORIGINS ?? "" });
  const corsOrigins = config.CORS_ORIGINS === "*" ? ["*"] : config.CORS_ORIGINS;
  const alarmEmail = merged.ALARM_EMAIL?.trim() || undefined;
  if (alarmEmail && !EMAIL.test(alarmEmail)) {
    throw new Error(`ALARM_EMAIL: ${alarmEmail} is not an e-mail address`);
  }
  const stage = merged.STAGE?.trim() || "dev";
  if (!STAGE.test(stage)) {
    throw new Error(
      `STAGE: ${stage} is not a stage name (a lower-case letter, then up to 15 of a-z, 0-9, -)`,
    );
  }
  const limit = (key: keyof typeof LIMITS) => {
    const text = merged[key]?.trim();
    if (!text) return DEFAULTS[key];
    const value = Number(text);
    const { min, max, what } = LIMITS[key];
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new Error(`${key}: ${text} is not a whole number of ${what} from ${min} to ${max}`);
    }
    return value;
  };
  const throttle = {
    rateLimit: limit("API_THROTTLE_RATE"),
    burstLimit: limit("API_THROTTLE_BURST"),
  };
  const waf = {
    rateLimit: limit("WAF_RATE_LIMIT"),
    anonymousRateLimit: limit("WAF_ANONYMOUS_RATE_LIMIT"),
  };
  const onUnlessOff = (key: "DELETION_PROTECTION" | "BACKUPS") => {
    const text = merged[key]?.trim().toLowerCase();
    if (!text || text === "true") return true;
    if (text === "false") return false;
    throw new Error(`${key}: ${merged[key]} is not true or false`);
  };
  const dataProtection = {
    deletionProtection: onUnlessOff("DELETION_PROTECTION"),
    backups: onUnlessOff("BACKUPS"),
  };
  return {
    service,
    modelKeySecret: merged.LLM_API_KEY_SECRET?.trim() || undefined,
    alarmEmail,
    corsOrigins,
    stage,
    throttle,
    waf,
    dataProtection,
  };
}

/** Validates settings as the functions will at cold start, so a bad one fails the synth. */
function checkServiceSettings(service: Record<string, string>) {
  const names = Object.fromEntries(
    CONFIG_KEYS.filter((key) => key.endsWith("_QUEUE_URL")).map((key) => [
      key,
      "https://sqs.invalid",
    ]),
  );
  return loadConfig({ ...names, TABLE_NAME: "table", BUCKET_NAME: "bucket", ...service });
}

/** The committed settings file, parsed. */
export function readSettingsFile(path = SETTINGS_FILE): Record<string, unknown> {
  const parsed = JSON.parse(readFileSync(path, "utf8")) as unknown;
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new Error(`${path} must hold one JSON object of settings`);
  }
  return parsed as Record<string, unknown>;
}
