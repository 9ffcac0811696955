import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { DomainError } from "../../lib/errors.js";
import { generateObject, parseStrict, strictJsonSchema } from "../../lib/llm/structured.js";
import { FakeOpenAI } from "../support/fake-openai.js";
import { llmFor } from "./helpers.js";

const Persona = z.object({
  name: z.string().min(1).max(80),
  role: z.string(),
  nickname: z.string().optional(),
  seniority: z.enum(["junior", "senior"]).optional(),
  goals: z.array(z.string()).min(1).max(5),
  budget: z.object({ amount: z.number().nonnegative(), currency: z.string().length(3) }).optional(),
  channels: z.array(z.object({ name: z.string(), weight: z.number().int().optional() })),
  note: z.string().nullable(),
});

describe("strictJsonSchema", () => {
  const schema = strictJsonSchema(Persona);
  const props = schema.properties as Record<string, Record<string, unknown>>;

  it("requires every property and forbids others, at every level", () => {
    expect(schema.required).toEqual(Object.keys(Persona.shape));
    expect(schema.additionalProperties).toBe(false);
    const channel = (props.channels?.items ?? {}) as Record<string, unknown>;
    expect(channel.required).toEqual(["name", "weight"]);
    expect(channel.additionalProperties).toBe(false);
  });

  it("turns optional fields into nullable ones", () => {
    expect(props.nickname).toEqual({ anyOf: [{ type: "string" }, { type: "null" }] });
    expect(props.seniority?.anyOf).toContainEqual({ type: "null" });
    expect(props.name?.anyOf).toBeUndefined();
    // Already nullable: left as it is, not doubled.
    expect(props.note).toEqual({ type: ["string", "null"] });
  });

  it("keeps only strict-mode keywords and moves limits into descriptions", () => {
    const text = JSON.stringify(schema);
    for (const keyword of [
      "minLength",
      "maxLength",
      "minItems",
      "maxItems",
      "$schema",
      "minimum",
    ]) {
      expect(text).not.toContain(`"${keyword}"`);
    }
    expect(props.goals?.description).toBe("(at least 1 items; at most 5 items)");
  });

  it("refuses records and non-object roots, which strict mode cannot express", () => {
    expect(() => strictJsonSchema(z.object({ scores: z.record(z.string(), z.number()) }))).toThrow(
      /records/,
    );
    expect(() => strictJsonSchema(z.array(z.string()))).toThrow(/object/);
  });
});

describe("parseStrict", () => {
  it("reads null in an optional field as absent, and keeps nulls the schema allows", () => {
    const parsed = parseStrict(Persona, {
      name: "Ada",
      role: "CMO",
      nickname: null,
      seniority: null,
      goals: ["grow"],
      budget: null,
      channels: [{ name: "email", weight: null }],
      note: null,
    });
    expect(parsed.success && parsed.data).toEqual({
      name: "Ada",
      role: "CMO",
      goals: ["grow"],
      channels: [{ name: "email" }],
      note: null,
    });
  });

  it("still refuses null in a required field", () => {
    expect(parseStrict(z.object({ a: z.string() }), { a: null }).success).toBe(false);
  });
});

describe("generateObject", () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await FakeOpenAI.start();
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  const valid = {
    name: "Ada",
    role: "CMO",
    nickname: null,
    seniority: "senior",
    goals: ["grow pipeline"],
    budget: null,
    channels: [],
    note: null,
  };
  const messages = [{ role: "user" as const, content: "Describe our buyer" }];
  const request = { name: "persona", schema: Persona, messages };

  it("asks for the strict JSON schema and returns the validated answer", async () => {
    fake.enqueue("chat", { json: valid });
    const persona = await generateObject(llmFor(fake).chat, request);
    expect(persona).toEqual({
      name: "Ada",
      role: "CMO",
      seniority: "senior",
      goals: ["grow pipeline"],
      channels: [],
      note: null,
    });
    expect(fake.chatRequests()[0]?.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "persona", strict: true, schema: strictJsonSchema(Persona) },
    });
  });

  it("sends an invalid answer back once with what is wrong, and takes the repair", async () => {
    const invalid = { ...valid, goals: [] };
    fake.enqueue("chat", { json: invalid }, { json: valid });
    expect((await generateObject(llmFor(fake).chat, request)).goals).toEqual(["grow pipeline"]);
    const repair = fake.chatRequests()[1];
    expect(repair?.messages.slice(0, 1)).toEqual(messages);
    expect(repair?.messages[1]).toEqual({ role: "assistant", content: JSON.stringify(invalid) });
    expect(repair?.messages[2]?.content).toMatch(/does not match[\s\S]*goals: Too small/);
  });

  it("repairs an answer that is not JSON at all", async () => {
    fake.enqueue("chat", { text: "Sure! Here it is: {" }, { json: valid });
    await generateObject(llmFor(fake).chat, request);
    expect(fake.chatRequests()[1]?.messages[2]?.content).toContain("not valid JSON");
  });

  it("answers 502 llm_error listing the problems when the repair is invalid too", async () => {
    fake.enqueue("chat", { json: { name: "" } }, { json: { name: "" } });
    const err = await generateObject(llmFor(fake).chat, request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ code: "llm_error" });
    expect((err as DomainError).details).toMatchObject({
      issues: expect.arrayContaining(["role: Invalid input: expected string, received undefined"]),
    });
    expect(fake.chatRequests()).toHaveLength(2);
  });

  it("does not repair a refusal", async () => {
    fake.enqueue("chat", { refusal: "No." });
    await expect(generateObject(llmFor(fake).chat, request)).rejects.toMatchObject({
      code: "llm_error",
      details: { refusal: "No." },
    });
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it("asks for a shorter answer when the first was cut off at the token limit", async () => {
    fake.enqueue("chat", { text: '{"name":"Ada","ro', finishReason: "length" }, { json: valid });
    await generateObject(llmFor(fake).chat, { ...request, maxTokens: 50 });
    expect(fake.chatRequests()[0]?.max_completion_tokens).toBe(50);
    expect(fake.chatRequests()[1]?.messages[2]?.content).toContain("cut off");
  });
});
