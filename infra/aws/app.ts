import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { bundleAll, REPO_ROOT } from "./bundle.js";
import { KbIntelStack, settingsFrom } from "./stack.js";

const bundles = await bundleAll(join(REPO_ROOT, "cdk.out", "bundles"));
const app = new App();
const secret = app.node.tryGetContext("openAiKeySecret") as string | undefined;
new KbIntelStack(app, "KbIntel", {
  bundles,
  settings: settingsFrom(process.env),
  ...(secret ? { openAiKeySecret: secret } : {}),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
