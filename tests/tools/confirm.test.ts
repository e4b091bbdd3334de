import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { type ConfirmOp, evaluateConfirmation } from "../../shared/tools/index.ts";
import { validTool } from "./helpers.ts";

const alice = { id: "alice", tenant: "acme" };

function decide(op: ConfirmOp, value: unknown, args: unknown, principal: unknown) {
  const condition: Record<string, unknown> = { param: "p", op, label: "L" };
  if (value !== undefined) condition.value = value;
  return evaluateConfirmation(validTool({ confirmWhen: [condition] }), args, principal);
}

// [op, condition value, args, principal, expected required]
type Row = [ConfirmOp, unknown, unknown, unknown, boolean];
const rows: Row[] = [
  [">", 100, { p: 101 }, alice, true],
  [">", 100, { p: 100 }, alice, false],
  [">=", 100, { p: 100 }, alice, true],
  [">=", 100, { p: 99.5 }, alice, false],
  ["<", 0, { p: -1 }, alice, true],
  ["<", 0, { p: 0 }, alice, false],
  ["<=", 0, { p: 0 }, alice, true],
  ["<=", 0, { p: 1 }, alice, false],
  ["==", 5, { p: 5 }, alice, true],
  ["==", 5, { p: 6 }, alice, false],
  ["!=", 5, { p: 6 }, alice, true],
  ["!=", 5, { p: 5 }, alice, false],
  // Numeric ops compare numbers only; a present non-number fails closed.
  [">", 100, { p: "1000" }, alice, true],
  ["<", 100, { p: null }, alice, true],
  ["==", 5, { p: "5" }, alice, true],
  [">", "100", { p: 5 }, alice, true],
  [">", 100, {}, alice, false],
  ["equals", { a: [1, 2] }, { p: { a: [1, 2] } }, alice, true],
  ["equals", { a: [1, 2] }, { p: { a: [2, 1] } }, alice, false],
  ["equals", 1, { p: "1" }, alice, false],
  ["equals", "x", {}, alice, false],
  ["not_equals", { a: 1 }, { p: { a: 2 } }, alice, true],
  ["not_equals", { a: 1 }, { p: { a: 1 } }, alice, false],
  ["not_equals", "x", {}, alice, false],
  ["in", ["EUR", "USD"], { p: "USD" }, alice, true],
  ["in", ["EUR", "USD"], { p: "GBP" }, alice, false],
  ["in", [{ k: 1 }], { p: { k: 1 } }, alice, true],
  ["in", "USD", { p: "USD" }, alice, true],
  ["not_in", ["EUR"], { p: "GBP" }, alice, true],
  ["not_in", ["EUR"], { p: "EUR" }, alice, false],
  ["not_in", 5, { p: 1 }, alice, true],
  ["exists", undefined, { p: null }, alice, true],
  ["exists", undefined, { q: 1 }, alice, false],
  ["not_empty", undefined, { p: "x" }, alice, true],
  ["not_empty", undefined, { p: 0 }, alice, true],
  ["not_empty", undefined, { p: "" }, alice, false],
  ["not_empty", undefined, { p: [] }, alice, false],
  ["not_empty", undefined, { p: {} }, alice, false],
  ["not_empty", undefined, { p: null }, alice, false],
  ["not_empty", undefined, {}, alice, false],
  ["equals_subject", undefined, { p: "alice" }, alice, true],
  ["equals_subject", undefined, { p: "bob" }, alice, false],
  ["equals_subject", undefined, { p: "bob" }, undefined, true],
  ["equals_subject", undefined, { p: "alice" }, { tenant: "acme" }, true],
  ["not_equals_subject", undefined, { p: "bob" }, alice, true],
  ["not_equals_subject", undefined, { p: "alice" }, alice, false],
  ["not_equals_subject", undefined, { p: 7 }, alice, true],
  ["not_equals_subject", undefined, { p: "bob" }, null, true],
  ["equals_subject_tenant", undefined, { p: "acme" }, alice, true],
  ["equals_subject_tenant", undefined, { p: "globex" }, alice, false],
  ["equals_subject_tenant", undefined, { p: "acme" }, { id: "alice" }, true],
  ["not_equals_subject_tenant", undefined, { p: "globex" }, alice, true],
  ["not_equals_subject_tenant", undefined, { p: "acme" }, alice, false],
  ["not_equals_subject_tenant", undefined, { p: "acme" }, undefined, true],
];

describe("evaluateConfirmation", () => {
  for (const [op, value, args, principal, expected] of rows) {
    test(`${op} ${JSON.stringify(value)} on ${JSON.stringify(args)} with ${JSON.stringify(principal)} → ${expected}`, () => {
      const d = decide(op, value, args, principal);
      expect(d.required).toBe(expected);
      expect(d.reasons).toEqual(expected ? ["L"] : []);
    });
  }

  test("covers all 16 ops", () => {
    expect(new Set(rows.map((r) => r[0])).size).toBe(16);
  });

  test("confirmRequired true always requires confirmation, with the prompt as reason", () => {
    const d = evaluateConfirmation(
      validTool({ confirmRequired: true, confirmPrompt: "Really delete?" }),
      {},
      alice,
    );
    expect(d).toEqual({ required: true, reasons: ["Really delete?"] });
    expect(evaluateConfirmation(validTool(), {}, alice)).toEqual({ required: false, reasons: [] });
  });

  test("param may be a dotted path; an exact key wins", () => {
    const tool = validTool({
      confirmWhen: [{ param: "order.lines.1.qty", op: ">", value: 10, label: "big line" }],
    });
    expect(
      evaluateConfirmation(tool, { order: { lines: [{ qty: 1 }, { qty: 11 }] } }, alice).required,
    ).toBe(true);
    expect(
      evaluateConfirmation(tool, { order: { lines: [{ qty: 1 }, { qty: 9 }] } }, alice).required,
    ).toBe(false);
    expect(evaluateConfirmation(tool, { "order.lines.1.qty": 50 }, alice).required).toBe(true);
  });

  test("reasons list every holding condition; unlabeled conditions get a generated text", () => {
    const tool = validTool({
      confirmWhen: [
        { param: "amount", op: ">", value: 1000, label: "large amount" },
        { param: "currency", op: "not_in", value: ["EUR"] },
        { param: "memo", op: "exists" },
      ],
    });
    expect(evaluateConfirmation(tool, { amount: 5000, currency: "USD" }, alice)).toEqual({
      required: true,
      reasons: ["large amount", 'currency not_in ["EUR"]'],
    });
  });

  test("malformed tools require confirmation instead of throwing", () => {
    expect(evaluateConfirmation(null, {}, alice).required).toBe(true);
    expect(
      evaluateConfirmation({ confirmRequired: false, confirmWhen: "x" }, {}, alice).required,
    ).toBe(true);
    expect(
      evaluateConfirmation({ confirmRequired: false, confirmWhen: [{ op: ">" }] }, {}, alice)
        .required,
    ).toBe(true);
  });

  test("never throws on arbitrary input (fast-check, fixed seed)", () => {
    const op = fc.constantFrom(
      ">",
      ">=",
      "<",
      "<=",
      "==",
      "!=",
      "equals",
      "not_equals",
      "in",
      "not_in",
      "exists",
      "not_empty",
      "equals_subject",
      "not_equals_subject",
      "equals_subject_tenant",
      "not_equals_subject_tenant",
      "bogus",
    );
    const condition = fc.record(
      {
        param: fc.oneof(
          fc.string(),
          fc.constantFrom("a", "a.b", "a.0", "__proto__", "constructor"),
        ),
        op,
        value: fc.jsonValue(),
      },
      { requiredKeys: [] },
    );
    const tool = fc.oneof(
      fc.anything(),
      fc.record({
        confirmRequired: fc.anything(),
        confirmPrompt: fc.anything(),
        confirmWhen: fc.oneof(fc.array(condition), fc.anything()),
      }),
    );
    fc.assert(
      fc.property(tool, fc.anything(), fc.anything(), (t, args, principal) => {
        const d = evaluateConfirmation(t, args, principal);
        return (
          typeof d.required === "boolean" &&
          Array.isArray(d.reasons) &&
          d.required === d.reasons.length > 0
        );
      }),
      { seed: 20240601, numRuns: 2000 },
    );
  });
});
