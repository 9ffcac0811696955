import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { bundleAll, REPO_ROOT } from "./bundle.js";
import { deploySettings, readSettingsFile } from "./settings.js";
import { KbIntelStack } from "./stack.js";

const app = new App();
const context = app.node.getAllContext() as Record<string, unknown>;
// `-c openAiKeySecret=...`, the flag of earlier versions, still names the key's secret.
const { openAiKeySecret, ...overrides } = context;
const settings = deploySettings(
  readSettingsFile(),
  {
    ...(openAiKeySecret === undefined ? {} : { LLM_API_KEY_SECRET: openAiKeySecret }),
    ...overrides,
  },
  process.env,
  (message) => console.warn(message),
);
const bundles = await bundleAll(join(REPO_ROOT, "cdk.out", "bundles"));
new KbIntelStack(app, "KbIntel", {
  bundles,
  settings,
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
