import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { DomainError } from "../../lib/errors.js";
import { extractJson } from "../../lib/llm/extract-json.js";
import { conform } from "../../lib/llm/soft-limits.js";
import { parseStrict, strictJsonSchema } from "../../lib/llm/strict-mode.js";
import { generateObject } from "../../lib/llm/structured.js";
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
    const { value: persona, warnings } = await generateObject(llmFor(fake).chat, request);
    expect(warnings).toEqual([]);
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

  it("sends an answer of the wrong shape back once with what is wrong and the schema, and takes the repair", async () => {
    const invalid = { ...valid, seniority: "mid" };
    fake.enqueue("chat", { json: invalid }, { json: valid });
    const { value } = await generateObject(llmFor(fake).chat, request);
    expect(value.seniority).toBe("senior");
    const repair = fake.chatRequests()[1];
    expect(repair?.messages.slice(0, 1)).toEqual(messages);
    expect(repair?.messages[1]).toEqual({ role: "assistant", content: JSON.stringify(invalid) });
    expect(repair?.messages[2]?.content).toMatch(/does not match[\s\S]*seniority: Invalid option/);
    expect(repair?.messages[2]?.content).toContain(JSON.stringify(strictJsonSchema(Persona)));
  });

  it("keeps an answer of the right shape that misses soft limits: cut where too long, warned where short", async () => {
    const long = "A".repeat(100);
    fake.enqueue("chat", {
      json: { ...valid, name: long, goals: [], budget: { amount: -5, currency: "EURO" } },
    });
    const { value, warnings } = await generateObject(llmFor(fake).chat, request);
    expect(fake.chatRequests()).toHaveLength(1);
    expect(value.name).toBe("A".repeat(80));
    expect(value.goals).toEqual([]);
    expect(value.budget).toEqual({ amount: 0, currency: "EUR" });
    expect(warnings).toEqual(
      expect.arrayContaining([
        "name: cut to 80 characters",
        "goals: 0 items, at least 1 asked",
        "budget.amount: raised to 0",
        "budget.currency: cut to 3 characters",
      ]),
    );
    expect(warnings).toHaveLength(4);
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

describe("generateObject against servers that support less", () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await FakeOpenAI.start();
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  const request = {
    name: "persona",
    schema: Persona,
    messages: [
      { role: "system" as const, content: "You describe buyers." },
      { role: "user" as const, content: "Describe our buyer" },
    ],
  };
  const schemaText = JSON.stringify(strictJsonSchema(Persona));
  const formatOf = (i: number) => fake.chatRequests()[i]?.response_format?.type;

  it("json_object only: after the 400, asks for a JSON object with the schema in the prompt, and remembers it", async () => {
    fake.formats("json_object");
    const llm = llmFor(fake).chat;
    const { value } = await generateObject(llm, request);
    expect(Persona.safeParse(value).success).toBe(true);
    expect([formatOf(0), formatOf(1)]).toEqual(["json_schema", "json_object"]);
    expect(fake.prompt(1)).toContain(`You describe buyers.\n\n`);
    expect(fake.prompt(1)).toContain(schemaText);

    await generateObject(llm, request);
    expect(fake.chatRequests()).toHaveLength(3);
    expect(formatOf(2)).toBe("json_object");
  });

  it("response_format ignored: takes the JSON out of the prose, repairs with the schema, then puts the schema in every prompt", async () => {
    fake.formats("ignored");
    const llm = llmFor(fake).chat;
    const { value } = await generateObject(llm, request);
    expect(Persona.safeParse(value).success).toBe(true);
    // The first answer could not know the schema; the repair gives it.
    expect(fake.chatRequests()).toHaveLength(2);
    expect(fake.prompt(1)).toContain(schemaText);

    const again = await generateObject(llm, request);
    expect(Persona.safeParse(again.value).success).toBe(true);
    expect(fake.chatRequests()).toHaveLength(3);
    expect(formatOf(2)).toBeUndefined();
    expect(fake.prompt(2)).toContain(schemaText);
  });

  it("answers one clear 502 when no format works and the answers are never JSON", async () => {
    fake.formats("json_object").fallback("chat", { text: "I am a language model." });
    const err = await generateObject(llmFor(fake).chat, request).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: "llm_error",
      details: { issues: ["The answer is not valid JSON"] },
    });
    expect(fake.chatRequests().map((r) => r.response_format?.type)).toEqual([
      "json_schema",
      "json_object",
      "json_object",
    ]);
  });

  it("passes on a 400 that every format gets, after trying each once", async () => {
    fake.fallback("chat", { status: 400, message: "context too long" });
    await expect(generateObject(llmFor(fake).chat, request)).rejects.toMatchObject({
      code: "llm_error",
      details: { providerStatus: 400 },
    });
    expect(fake.chatRequests()).toHaveLength(3);
  });
});

describe("extractJson and conform", () => {
  it("finds the JSON in a bare answer, a fenced block or prose", () => {
    expect(extractJson('{"a":1}')).toEqual({ json: { a: 1 }, wrapped: false });
    expect(extractJson('Here:\n```json\n{"a":2}\n```\nok')).toEqual({
      json: { a: 2 },
      wrapped: true,
    });
    expect(extractJson('The object {"a":3} is it')).toEqual({ json: { a: 3 }, wrapped: true });
    expect(extractJson("no json {")).toBeUndefined();
  });

  it("cuts lists that an exact length bounds, and warns of short ones", () => {
    const Stages = z.object({ stages: z.array(z.string()).length(3) });
    expect(conform(Stages, { stages: ["a", "b", "c", "d"] })).toEqual({
      ok: true,
      value: { stages: ["a", "b", "c"] },
      warnings: ["stages: cut to 3 items"],
    });
    expect(conform(Stages, { stages: ["a"] })).toMatchObject({
      ok: true,
      warnings: ["stages: 1 items, exactly 3 asked"],
    });
    expect(conform(Stages, { stages: "a" })).toMatchObject({ ok: false });
  });
});
