import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import {
  type CompileInput,
  compile,
  compileTools,
  DiagnosticSink,
  serializeResult,
  validateCompileResult,
  writeCompileOutput,
} from "../../shared/tools/index.ts";
import type { Json } from "../../shared/tools/schema-merge.ts";
import { expectSoundOutput, REPO_ROOT } from "./helpers.ts";

const SEED = 424242;
const names = fc.constantFrom("A", "B", "C", "D");
const ref = names.map((n) => ({ $ref: `#/components/schemas/${n}` }));

// Schemas that refer to each other freely, so cycles of every shape appear.
const schema: fc.Arbitrary<Json> = fc.letrec<{ s: Json }>((tie) => ({
  s: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom<Json>(
      { type: "string" },
      { type: "integer" },
      {},
      { type: "string", format: "binary" },
    ),
    ref,
    fc.record({
      type: fc.constant("object"),
      properties: fc.dictionary(fc.string({ maxLength: 6 }), tie("s"), { maxKeys: 3 }),
    }),
    fc.record({ type: fc.constant("array"), items: tie("s") }),
    fc.record({ allOf: fc.array(tie("s"), { maxLength: 3 }) }),
    fc.record({ oneOf: fc.array(tie("s"), { maxLength: 3 }) }),
    fc.jsonValue() as fc.Arbitrary<Json>,
  ),
})).s;

const parameter = fc.record(
  {
    name: fc.oneof(
      fc.constantFrom("id", "body", "Authorization", "a b", ""),
      fc.string({ maxLength: 8 }),
    ),
    in: fc.constantFrom("path", "query", "header", "cookie", "body", "formData", "weird"),
    required: fc.boolean(),
    schema,
    type: fc.constantFrom("string", "file", "integer"),
  },
  { requiredKeys: ["name", "in"] },
);

const operation = fc.record(
  {
    operationId: fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.constantFrom("same", "same", "x".repeat(90)),
    ),
    summary: fc.string({ maxLength: 20 }),
    description: fc.string({ maxLength: 700 }),
    tags: fc.array(fc.string({ maxLength: 120 }), { maxLength: 3 }),
    parameters: fc.array(
      fc.oneof(parameter, fc.constant({ $ref: "#/components/parameters/P" }), fc.anything()),
      { maxLength: 4 },
    ),
    requestBody: fc.record({
      required: fc.boolean(),
      content: fc.dictionary(
        fc.constantFrom(
          "application/json",
          "application/x-www-form-urlencoded",
          "multipart/form-data",
          "text/plain",
        ),
        fc.record({ schema }),
        { maxKeys: 2 },
      ),
    }),
    "x-service-risk": fc.constantFrom("low", "high", "nope", 3),
    "x-service-confirmWhen": fc.anything(),
    "x-service-exclude": fc.boolean(),
  },
  { requiredKeys: [] },
);

const openapiDoc = fc.record({
  openapi: fc.constantFrom("3.0.3", "3.1.0", "2.0", "9"),
  swagger: fc.constantFrom(undefined, "2.0"),
  info: fc.constant({ title: "fuzz", version: "1" }),
  components: fc.record({
    schemas: fc.record({ A: schema, B: schema, C: schema, D: schema }),
    parameters: fc.record({
      P: fc.oneof(parameter, fc.constant({ $ref: "#/components/parameters/P" })),
    }),
  }),
  paths: fc.dictionary(
    fc.oneof(
      fc.constantFrom("/a", "/a/{id}", "/b/{id}/delete", "nope"),
      fc.string({ maxLength: 10 }).map((s) => `/${s}`),
    ),
    fc.dictionary(
      fc.constantFrom(
        "get",
        "put",
        "post",
        "delete",
        "patch",
        "head",
        "options",
        "trace",
        "parameters",
      ),
      fc.oneof(operation, fc.anything()),
      { maxKeys: 4 },
    ),
    { maxKeys: 5 },
  ),
});

const overlayDoc = fc.record(
  {
    overlay: fc.constantFrom("1.0.0", "1.1.0", "2"),
    info: fc.constant({ title: "o", version: "1" }),
    actions: fc.array(
      fc.record(
        {
          target: fc.oneof(
            fc.constantFrom(
              "$",
              "$.paths.*",
              "$.paths.*.*",
              "$..properties",
              "$.paths[?@.x]",
              "$[",
              "$.info.title",
            ),
            fc.string().map((s) => `$${s}`),
          ),
          update: fc.anything(),
          remove: fc.boolean(),
          copy: fc.constantFrom("$.components", "$.paths.*", "$["),
        },
        { requiredKeys: ["target"] },
      ),
      { maxLength: 4 },
    ),
  },
  { requiredKeys: ["overlay", "info", "actions"] },
);

function assertValid(inputs: Parameters<typeof compile>[0]): boolean {
  const r = compile(inputs);
  const problems = validateCompileResult(r);
  if (problems.length > 0) throw new Error(JSON.stringify(problems.slice(0, 3)));
  return true;
}

describe("compiler fuzz (fixed seed)", () => {
  test("with any budgets and inlining, every tool fits, every schema is valid, every loss is named", () => {
    const options = fc.record({
      maxToolBytes: fc.constantFrom(0, 300, 800, 2000, 65_536),
      maxOutputBytes: fc.constantFrom(0, 1000, 5000),
      inlineRefs: fc.constantFrom(false, true, 500, 100_000),
    });
    fc.assert(
      fc.property(openapiDoc, options, (raw, opts) => {
        const doc = JSON.parse(JSON.stringify(raw)) as Json;
        const r = compile([{ kind: "openapi", label: "doc", doc }], [], opts);
        expectSoundOutput(r);
        const sizes = r.tools.map((t) => Buffer.byteLength(JSON.stringify(t)));
        if (opts.maxToolBytes > 0)
          for (const b of sizes) expect(b).toBeLessThanOrEqual(opts.maxToolBytes);
        if (opts.maxOutputBytes > 0)
          expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(opts.maxOutputBytes);
        const all = compile([{ kind: "openapi", label: "doc", doc }], [], {
          maxToolBytes: 0,
          maxOutputBytes: 0,
        });
        // A tool missing under budgets is named by an error; a reduced one by a warning.
        const kept = new Set(r.tools.map((t) => t.name));
        const named = r.diagnostics
          .filter((d) => d.code === "budget.tool_omitted" || d.code === "budget.compile_exceeded")
          .map((d) => d.message);
        for (const t of all.tools)
          if (!kept.has(t.name))
            expect(named.some((m) => m.includes(`tool ${t.name} `))).toBe(true);
        const reduced = r.tools.filter((t) => "x-service-schema-reduced" in t.extensions).length;
        expect(r.diagnostics.filter((d) => d.code === "budget.tool_reduced")).toHaveLength(reduced);
        return true;
      }),
      { seed: SEED, numRuns: 200 },
    );
  });

  test("the streamed JSON equals serializeResult for generated documents", async () => {
    await fc.assert(
      fc.asyncProperty(openapiDoc, async (raw) => {
        const inputs: CompileInput[] = [
          { kind: "openapi", label: "doc", doc: JSON.parse(JSON.stringify(raw)) as Json },
        ];
        const sink = new DiagnosticSink();
        let text = "";
        await writeCompileOutput({
          tools: compileTools(inputs, sink),
          diagnostics: () => sink.ordered(),
          format: "json",
          write: (chunk) => {
            text += chunk;
          },
        });
        expect(text).toBe(serializeResult(compile(inputs)));
      }),
      { seed: SEED, numRuns: 100 },
    );
  });

  test("generated OpenAPI documents with overlays never throw and always give a valid compileResult", () => {
    fc.assert(
      fc.property(openapiDoc, fc.array(overlayDoc, { maxLength: 2 }), (doc, overlays) =>
        assertValid([
          { kind: "openapi", label: "doc", doc: JSON.parse(JSON.stringify(doc)) as Json },
          ...overlays.map((o, i) => ({
            kind: "overlay" as const,
            label: `o${i}`,
            doc: JSON.parse(JSON.stringify(o)) as Json,
          })),
        ]),
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  test("mutated real documents never throw", () => {
    const base = JSON.parse(
      readFileSync(
        join(REPO_ROOT, "node_modules/@readme/oas-examples/3.0/json/petstore.json"),
        "utf8",
      ),
    );
    const paths: string[][] = [];
    const walk = (v: unknown, p: string[]) => {
      if (paths.length > 2000 || !v || typeof v !== "object") return;
      paths.push(p);
      for (const [k, c] of Object.entries(v)) walk(c, [...p, k]);
    };
    walk(base, []);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(paths.length - 1), fc.anything()), { maxLength: 5 }),
        (edits) => {
          const doc = structuredClone(base);
          for (const [i, value] of edits) {
            const p = paths[i] ?? [];
            if (p.length === 0) continue;
            let parent = doc;
            for (const k of p.slice(0, -1)) parent = parent?.[k];
            if (parent && typeof parent === "object")
              parent[p.at(-1) as string] = JSON.parse(JSON.stringify(value ?? null));
          }
          return assertValid([{ kind: "openapi", label: "petstore", doc }]);
        },
      ),
      { seed: SEED, numRuns: 200 },
    );
  });

  test("very deep and long cyclic inputs terminate with a valid result", () => {
    let deep: Json = { type: "string" };
    for (let i = 0; i < 3000; i++) deep = { type: "object", properties: { n: deep } };
    const chain: Record<string, Json> = {};
    for (let i = 0; i < 3000; i++)
      chain[`S${i}`] = {
        type: "object",
        properties: { next: { $ref: `#/components/schemas/S${(i + 1) % 3000}` } },
      };
    const body = (schema: Json) => ({ content: { "application/json": { schema } } });
    const doc: Json = {
      openapi: "3.1.0",
      info: { title: "deep", version: "1" },
      components: { schemas: chain },
      paths: {
        "/deep": { post: { operationId: "deep", requestBody: body(deep) } },
        "/chain": {
          post: { operationId: "chain", requestBody: body({ $ref: "#/components/schemas/S0" }) },
        },
      },
    };
    const r = compile([{ kind: "openapi", label: "deep", doc }]);
    expect(validateCompileResult(r)).toEqual([]);
    expect(r.tools.map((t) => t.name)).toEqual(["chain", "deep"]);
    expect(r.diagnostics.some((d) => d.code === "schema.too_deep")).toBe(true);
  });
});
