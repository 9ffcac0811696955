import { createRoute } from "@hono/zod-openapi";
import { commonErrors, jsonBody, jsonResponse, NoQuery } from "../../http/schemas.js";
import { BrandProfileInput, BrandProfileSchema } from "./profiles.js";

export const getBrand = createRoute({
  operationId: "getBrand",
  method: "get",
  path: "/api/brand",
  tags: ["Brand"],
  summary: "Get the brand profile",
  description: "404 until a profile has been saved with PUT.",
  request: { query: NoQuery },
  responses: { 200: jsonResponse(BrandProfileSchema, "The brand profile"), ...commonErrors },
});

export const putBrand = createRoute({
  operationId: "saveBrand",
  method: "put",
  path: "/api/brand",
  tags: ["Brand"],
  summary: "Save the brand profile",
  description:
    "Replaces the whole profile (fields left out are removed). It grounds every chat answer and intel module.",
  request: { query: NoQuery, body: jsonBody(BrandProfileInput) },
  responses: { 200: jsonResponse(BrandProfileSchema, "The saved profile"), ...commonErrors },
});

export const brandContract = [getBrand, putBrand];
