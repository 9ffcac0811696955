import { handle } from "hono/aws-lambda";
import { consoleRoutes } from "../lib/console/routes.js";
import { createServiceApp } from "../lib/http/app.js";
import { denyAll } from "../lib/http/auth.js";
import { invocation } from "../lib/invocation.js";

/**
 * The web console: a page and two static assets, public, touching no store. Locally presigned
 * uploads go to the S3 emulator, which the page's content security policy must allow.
 */
const emulator = process.env.AWS_ENDPOINT_URL_S3;

export const app = createServiceApp({
  authenticate: denyAll,
  modules: [consoleRoutes(emulator ? { uploadOrigins: [new URL(emulator).origin] } : {})],
});

export const handler = invocation(handle(app));
