import { describe, expect, test } from "bun:test";
import {
  CONFIRM_OPS,
  METHODS,
  PARAM_LOCATIONS,
  RISKS,
  SOURCES,
  validateToolDefinition,
} from "../../shared/tools/index.ts";
import { validTool } from "./helpers.ts";

const s = (n: number, ch = "a") => ch.repeat(n);
const cond = (over: Record<string, unknown> = {}) => ({
  param: "amount",
  op: ">",
  value: 1,
  ...over,
});

function codes(record: unknown): string[] {
  return validateToolDefinition(record).map((d) => d.code);
}

describe("validateToolDefinition", () => {
  test("accepts the baseline record", () => {
    expect(validateToolDefinition(validTool())).toEqual([]);
  });

  // [label, overrides, expected error code or undefined for valid]
  const cases: [string, Record<string, unknown>, string | undefined][] = [
    ["name 64 characters", { name: s(64) }, undefined],
    ["name 65 characters", { name: s(65) }, "record.max_length"],
    ["name empty", { name: "" }, "record.min_length"],
    ["name starting with a digit", { name: "1pet" }, "record.pattern"],
    ["name with a dash", { name: "get-pet" }, "record.pattern"],
    ["name starting with _", { name: "_pet_2" }, undefined],
    ["description 500", { description: s(500) }, undefined],
    ["description 501", { description: s(501) }, "record.max_length"],
    ["description empty", { description: "" }, "record.min_length"],
    ["scope 191", { scope: s(191) }, undefined],
    ["scope 192", { scope: s(192) }, "record.max_length"],
    ["scope empty", { scope: "" }, "record.min_length"],
    ["confirmPrompt 200", { confirmPrompt: s(200) }, undefined],
    ["confirmPrompt 201", { confirmPrompt: s(201) }, "record.max_length"],
    ["confirmWhen 20 items", { confirmWhen: Array.from({ length: 20 }, () => cond()) }, undefined],
    [
      "confirmWhen 21 items",
      { confirmWhen: Array.from({ length: 21 }, () => cond()) },
      "record.max_items",
    ],
    ["label 120", { confirmWhen: [cond({ label: s(120) })] }, undefined],
    ["label 121", { confirmWhen: [cond({ label: s(121) })] }, "record.max_length"],
    ["label empty", { confirmWhen: [cond({ label: "" })] }, "record.min_length"],
    ["param 191", { confirmWhen: [cond({ param: s(191) })] }, undefined],
    ["param 192", { confirmWhen: [cond({ param: s(192) })] }, "record.max_length"],
    ["param empty", { confirmWhen: [cond({ param: "" })] }, "record.min_length"],
    ["condition without op", { confirmWhen: [{ param: "a" }] }, "record.required"],
    [
      "condition with extra field",
      { confirmWhen: [cond({ extra: 1 })] },
      "record.additional_property",
    ],
    ["condition unknown op", { confirmWhen: [cond({ op: "~=" })] }, "record.enum"],
    ["context 50 items", { context: Array.from({ length: 50 }, (_, i) => `t${i}`) }, undefined],
    [
      "context 51 items",
      { context: Array.from({ length: 51 }, (_, i) => `t${i}`) },
      "record.max_items",
    ],
    ["context item 100 characters", { context: [s(100)] }, undefined],
    ["context item 101 characters", { context: [s(101)] }, "record.max_length"],
    ["context item empty", { context: [""] }, "record.min_length"],
    ["timeoutMs -1", { timeoutMs: -1 }, "record.minimum"],
    ["timeoutMs 0", { timeoutMs: 0 }, undefined],
    ["timeoutMs 60000", { timeoutMs: 60000 }, undefined],
    ["timeoutMs 60001", { timeoutMs: 60001 }, "record.maximum"],
    ["timeoutMs 1.5", { timeoutMs: 1.5 }, "record.type"],
    ["rateLimitPerMin -1", { rateLimitPerMin: -1 }, "record.minimum"],
    ["rateLimitPerMin 0", { rateLimitPerMin: 0 }, undefined],
    ["extension x-ai-foo", { extensions: { "x-ai-foo": { any: ["json"] } } }, undefined],
    ["extension x-service-foo", { extensions: { "x-service-foo": 1 } }, undefined],
    ["extension x-business-foo", { extensions: { "x-business-foo": null } }, undefined],
    ["extension x-other-foo", { extensions: { "x-other-foo": 1 } }, "record.property_name"],
    ["extension without x-", { extensions: { foo: 1 } }, "record.property_name"],
    ["inputSchema without type", { inputSchema: { properties: {} } }, "record.required"],
    [
      "inputSchema type string",
      { inputSchema: { type: "string", properties: {} } },
      "record.const",
    ],
    ["inputSchema without properties", { inputSchema: { type: "object" } }, "record.required"],
    [
      "inputSchema duplicate required",
      { inputSchema: { type: "object", properties: {}, required: ["a", "a"] } },
      "record.unique_items",
    ],
    [
      "inputSchema extra members",
      { inputSchema: { type: "object", properties: {}, $defs: {}, additionalProperties: false } },
      undefined,
    ],
    ["path without leading slash", { path: "pets" }, "record.pattern"],
    ["path empty", { path: "" }, "record.min_length"],
    ["schemaVersion other", { schemaVersion: "service.tool-definition.v2" }, "record.const"],
    ["unknown top-level field", { extra: true }, "record.additional_property"],
    ["paramIn cookie", { paramIn: { id: "cookie" } }, "record.enum"],
    ["risk critical", { risk: "critical" }, "record.enum"],
    ["source other", { source: "graphql" }, "record.enum"],
    ["method TRACE", { method: "TRACE" }, "record.enum"],
    ["confirmRequired as string", { confirmRequired: "yes" }, "record.type"],
  ];
  for (const [label, over, code] of cases) {
    test(label, () => {
      const got = codes(validTool(over));
      if (code === undefined) expect(got).toEqual([]);
      else expect(got).toContain(code);
    });
  }

  test("every field except confirmWhen is required", () => {
    for (const field of Object.keys(validTool())) {
      const record = validTool();
      delete record[field];
      const d = validateToolDefinition(record);
      expect(d.map((x) => x.code)).toEqual(["record.required"]);
      expect(d[0]?.path).toBe(`#/${field}`);
    }
    const withoutConfirmWhen = validTool();
    delete withoutConfirmWhen.confirmWhen;
    expect(validateToolDefinition(withoutConfirmWhen)).toEqual([]);
  });

  test("every enum value is accepted", () => {
    for (const source of SOURCES) expect(codes(validTool({ source }))).toEqual([]);
    for (const method of METHODS) expect(codes(validTool({ method }))).toEqual([]);
    for (const risk of RISKS) expect(codes(validTool({ risk }))).toEqual([]);
    for (const loc of PARAM_LOCATIONS)
      expect(codes(validTool({ paramIn: { id: loc } }))).toEqual([]);
    for (const op of CONFIRM_OPS)
      expect(codes(validTool({ confirmWhen: [{ param: "a", op }] }))).toEqual([]);
    expect(CONFIRM_OPS).toHaveLength(16);
  });

  test("diagnostics carry path, stable code, message and suggestion; never throws", () => {
    const [d] = validateToolDefinition(validTool({ name: "bad name" }));
    expect(d).toEqual({
      severity: "error",
      path: "#/name",
      code: "record.pattern",
      message: expect.stringContaining("/name"),
      suggestion: expect.any(String),
    });
    const [ext] = validateToolDefinition(validTool({ extensions: { "x-other-foo": 1 } }));
    expect(ext?.path).toBe("#/extensions/x-other-foo");
    for (const junk of [null, undefined, 42, "x", [], { name: Symbol.for("x") }, () => 1]) {
      expect(() => validateToolDefinition(junk)).not.toThrow();
      expect(validateToolDefinition(junk).length).toBeGreaterThan(0);
    }
  });
});
