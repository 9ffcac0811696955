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
const DEPLOY_KEYS = ["LLM_API_KEY_SECRET", "ALARM_EMAIL", "CORS_ORIGINS"] as const;

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
    for (const [key, value] of Object.entries(values)) {
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
  return {
    service,
    modelKeySecret: merged.LLM_API_KEY_SECRET?.trim() || undefined,
    alarmEmail,
    corsOrigins,
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
