import { handle } from "hono/aws-lambda";
import { consoleRoutes } from "../lib/console/routes.js";
import { createServiceApp } from "../lib/http/app.js";
import { denyAll } from "../lib/http/auth.js";
import { invocation } from "../lib/invocation.js";
import { bucketOrigin } from "../lib/store/bucket-origin.js";

/**
 * The web console: a page and two static assets, public, touching no store. Its content security
 * policy lets the page send presigned uploads to the service's bucket alone (on AWS its regional
 * host, from the bucket's name and the function's region; locally the S3 emulator).
 */
const { AWS_ENDPOINT_URL_S3: emulator, BUCKET_NAME: bucket, AWS_REGION: region } = process.env;
const uploadOrigin = emulator
  ? new URL(emulator).origin
  : bucket && region
    ? bucketOrigin(bucket, region)
    : undefined;

export const app = createServiceApp({
  authenticate: denyAll,
  modules: [consoleRoutes(uploadOrigin ? { uploadOrigins: [uploadOrigin] } : {})],
});

export const handler = invocation(handle(app));
