/**
 * Complements tests/tools/fuzz.test.ts and tests/tools/confirm.test.ts (generated and mutated
 * OpenAPI/Overlay documents, deep and cyclic $refs, arbitrary JSON for evaluateConfirmation) with
 * what they do not cover: every input kind with arbitrary documents under a wall-clock bound,
 * overlays that grow the document on every action, and non-JSON hostile arguments.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  type CompileInput,
  compile,
  evaluateConfirmation,
  validateCompileResult,
} from "../../shared/tools/index.ts";
import { FUZZ_SEED, fuzzRuns } from "./settings.ts";

const BOUND_MS = 2_000;

function compileWithinBound(inputs: CompileInput[]): void {
  const started = performance.now();
  const result = compile(inputs);
  expect(performance.now() - started).toBeLessThan(BOUND_MS);
  expect(validateCompileResult(result)).toEqual([]);
}

const anyDoc = fc.oneof(
  fc.jsonValue(),
  fc.record({ tools: fc.array(fc.jsonValue(), { maxLength: 4 }) }),
  fc.record({ tools: fc.array(fc.record({ name: fc.string(), inputSchema: fc.jsonValue() })) }),
  fc.record({ openapi: fc.constant("3.1.0"), paths: fc.jsonValue() }),
);

describe(`tool compiler: every input kind, bounded (${fuzzRuns(150)} runs, seed ${FUZZ_SEED})`, () => {
  test("arbitrary documents of every kind never throw and give a valid compileResult in time", () => {
    const input = fc.oneof(
      fc
        .tuple(fc.constantFrom("openapi", "overlay", "mcp", "manual"), anyDoc)
        .map(([kind, doc]) => ({ kind, label: kind, doc }) as CompileInput),
      fc
        .array(fc.jsonValue(), { maxLength: 4 })
        .map((tools): CompileInput => ({ kind: "sdk", label: "sdk", doc: tools })),
    );
    fc.assert(
      fc.property(fc.array(input, { maxLength: 4 }), (inputs) => {
        compileWithinBound(inputs);
      }),
      { seed: FUZZ_SEED, numRuns: fuzzRuns(150) },
    );
  });

  test("overlays that copy the document into itself, action after action, stay bounded", () => {
    const op = { operationId: "op", responses: { "200": { description: "ok" } } };
    const doc = {
      openapi: "3.1.0",
      info: { title: "t", version: "1" },
      paths: { "/a": { get: op } },
    };
    const grow = Array.from({ length: 20 }, (_, i) => ({
      target: "$.paths['/a'].get",
      update: { [`x-service-copy${i}`]: { nested: "x".repeat(100) } },
    }));
    const selfCopy = Array.from({ length: 20 }, () => ({ target: "$.info", copy: "$.paths" }));
    const overlay = (actions: unknown[]) => ({
      kind: "overlay" as const,
      label: "grow",
      doc: { overlay: "1.1.0", info: { title: "o", version: "1" }, actions },
    });
    compileWithinBound([
      { kind: "openapi", label: "doc", doc },
      overlay(grow),
      overlay(selfCopy),
      overlay([{ target: "$..*", update: { description: "d" } }]),
    ]);
  });
});

describe("evaluateConfirmation with arguments no JSON parser would produce", () => {
  const tool = {
    confirmRequired: false,
    confirmWhen: [
      { param: "amount", op: ">", value: 100 },
      { param: "a.b.c", op: "exists" },
      { param: "owner", op: "equals_subject" },
    ],
  };
  const throwing = new Proxy(
    {},
    {
      get() {
        throw new Error("trap");
      },
      has() {
        throw new Error("trap");
      },
      getOwnPropertyDescriptor() {
        throw new Error("trap");
      },
      ownKeys() {
        throw new Error("trap");
      },
    },
  );
  const cyclic: Record<string, unknown> = { amount: 5 };
  cyclic.a = { b: cyclic };
  const getter = Object.defineProperty({}, "amount", {
    enumerable: true,
    get() {
      throw new Error("getter");
    },
  });
  const hostile = [throwing, cyclic, getter, { amount: 10n }, { amount: Symbol("x") }];

  for (const [i, args] of hostile.entries()) {
    test(`hostile argument ${i} never throws, and fails closed when it cannot be read`, () => {
      for (const principal of [undefined, throwing, { id: "u", tenant: "t" }]) {
        const decision = evaluateConfirmation(tool, args, principal);
        expect(typeof decision.required).toBe("boolean");
        expect(decision.required).toBe(decision.reasons.length > 0);
        if (args === throwing || args === getter || principal === throwing) {
          expect(decision.required).toBe(true);
        }
      }
    });
  }

  test("a tool definition that throws when read requires confirmation", () => {
    expect(evaluateConfirmation(throwing, {}, undefined).required).toBe(true);
  });
});
