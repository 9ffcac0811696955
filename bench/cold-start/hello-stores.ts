import { Hono } from "hono";
import { handle } from "hono/aws-lambda";
import { loadConfig } from "../../lib/config.js";
import { createStores } from "../../lib/store/clients.js";

/**
 * A peer of figure 1: the minimal Hono Lambda plus the service's configuration and store clients
 * (DynamoDB, S3, SQS) created at module scope as every service function creates them. What a
 * function costs beyond this row is its own code; what this row costs beyond `hello` is the SDK.
 */
const stores = createStores(loadConfig());
const app = new Hono();
app.get("/hello", (c) => c.json({ hello: "world", table: stores.table.name }));

export const handler = handle(app);
