import { Hono } from "hono";
import { handle } from "hono/aws-lambda";

/**
 * The floor of figure 1: the smallest Hono Lambda there is, bundled with the same options as
 * every function, so what a real function adds over it is its own code and dependencies.
 */
const app = new Hono();
app.get("/hello", (c) => c.json({ hello: "world" }));

export const handler = handle(app);
