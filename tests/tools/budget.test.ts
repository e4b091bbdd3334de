import { describe, expect, test } from "bun:test";
import {
  type CompileOptions,
  type CompileResult,
  compile,
  metaSchemaErrors,
  type ToolDefinition,
  validateCompileResult,
} from "../../shared/tools/index.ts";

const long = (word: string) => `${word} `.repeat(200);

/** A chain A → B → C → D of definitions with long descriptions, and a recursive Tree. */
const doc = {
  openapi: "3.1.0",
  info: { title: "budget", version: "1" },
  components: {
    schemas: {
      A: {
        type: "object",
        description: long("a"),
        properties: { b: { $ref: "#/components/schemas/B" } },
      },
      B: {
        type: "object",
        description: long("b"),
        properties: { c: { $ref: "#/components/schemas/C" } },
      },
      C: {
        type: "object",
        description: long("c"),
        properties: { d: { $ref: "#/components/schemas/D" } },
      },
      D: { type: "string", description: long("d"), enum: ["x", "y"] },
      Tree: {
        type: "object",
        properties: {
          label: { type: "string" },
          kids: { type: "array", items: { $ref: "#/components/schemas/Tree" } },
        },
      },
    },
  },
  paths: {
    "/chain": {
      post: {
        operationId: "chain",
        requestBody: {
          content: {
            "application/json": {
              schema: { type: "object", properties: { a: { $ref: "#/components/schemas/A" } } },
            },
          },
        },
      },
    },
    "/tree": {
      post: {
        operationId: "tree",
        requestBody: {
          content: { "application/json": { schema: { $ref: "#/components/schemas/Tree" } } },
        },
      },
    },
    "/wide": {
      get: {
        operationId: "wide",
        parameters: Array.from({ length: 200 }, (_, i) => ({
          name: `p${i}`,
          in: "query",
          schema: { type: "string" },
        })),
      },
    },
  },
};

function run(options: CompileOptions): CompileResult {
  return compile([{ kind: "openapi", label: "b.json", doc }], [], options);
}

const tool = (r: CompileResult, name: string): ToolDefinition | undefined =>
  r.tools.find((t) => t.name === name);

const bytes = (t: unknown) => Buffer.byteLength(JSON.stringify(t));

/** Every `#/$defs/X` reference in a tool's inputSchema names an entry of its $defs. */
function refsResolve(t: ToolDefinition): void {
  const defs = Object.keys((t.inputSchema.$defs as object | undefined) ?? {});
  for (const m of JSON.stringify(t.inputSchema).matchAll(/"#\/\$defs\/([^"]+)"/g))
    expect(defs).toContain(m[1] as string);
}

describe("size budgets", () => {
  test("without limits every definition is kept whole, once, under $defs", () => {
    const r = run({ maxToolBytes: 0, maxOutputBytes: 0 });
    const chain = tool(r, "chain") as ToolDefinition;
    expect(Object.keys(chain.inputSchema.$defs as object)).toEqual(["A", "B", "C", "D"]);
    expect(r.diagnostics.filter((d) => d.code.startsWith("budget."))).toEqual([]);
  });

  test("a tool over the budget drops annotations, then keeps definitions to the depth that fits", () => {
    const full = bytes(tool(run({ maxToolBytes: 0 }), "chain"));
    const r = run({ maxToolBytes: 1200 });
    const chain = tool(r, "chain") as ToolDefinition;
    expect(bytes(chain)).toBeLessThanOrEqual(1200);
    expect(bytes(chain)).toBeLessThan(full);
    const reduced = chain.extensions["x-service-schema-reduced"] as Record<string, unknown>;
    expect(reduced).toMatchObject({
      originalBytes: full,
      budgetBytes: 1200,
      annotationsDropped: true,
    });
    const defs = chain.inputSchema.$defs as Record<string, Record<string, unknown>>;
    // Whatever was kept lost its description; what was cut is a stub that keeps its type.
    for (const d of Object.values(defs)) {
      if (d.description !== "Schema omitted to fit the tool size budget.")
        expect(d).not.toHaveProperty("description");
    }
    if (typeof reduced.keptDepth === "number") expect(reduced.stubbedDefs).toBeGreaterThan(0);
    refsResolve(chain);
    expect(metaSchemaErrors(chain.inputSchema)).toEqual([]);
    const warning = r.diagnostics.find((d) => d.code === "budget.tool_reduced");
    expect(warning?.severity).toBe("warning");
    expect(warning?.path).toBe("b.json#/paths/~1chain/post");
    expect(warning?.message).toContain("tool chain was");
    expect(validateCompileResult(r)).toEqual([]);
  });

  test("a tight budget stubs the definitions the inputs refer to, keeping their types", () => {
    const r = run({ maxToolBytes: 800 });
    const chain = tool(r, "chain") as ToolDefinition;
    expect(bytes(chain)).toBeLessThanOrEqual(800);
    const defs = chain.inputSchema.$defs as Record<string, Record<string, unknown>>;
    expect(defs.A).toEqual({
      type: "object",
      description: "Schema omitted to fit the tool size budget.",
    });
    expect(Object.keys(defs)).toEqual(["A"]);
    expect(chain.extensions["x-service-schema-reduced"]).toMatchObject({
      keptDepth: 0,
      stubbedDefs: 1,
    });
  });

  test("a tool that cannot fit is left out with an error naming it, never cut silently", () => {
    const r = run({ maxToolBytes: 2000 });
    expect(tool(r, "wide")).toBeUndefined();
    const error = r.diagnostics.find((d) => d.code === "budget.tool_omitted");
    expect(error).toMatchObject({ severity: "error", path: "b.json#/paths/~1wide/get" });
    expect(error?.message).toContain("tool wide is");
    expect(tool(r, "chain")).toBeDefined();
  });

  test("the output budget leaves out the tools past it, in name order, each with an error", () => {
    const all = run({ maxToolBytes: 0, maxOutputBytes: 0 });
    expect(all.tools.map((t) => t.name)).toEqual(["chain", "tree", "wide"]);
    const limit = bytes(all.tools[0]) + bytes(all.tools[1]);
    const r = run({ maxToolBytes: 0, maxOutputBytes: limit });
    expect(r.tools.map((t) => t.name)).toEqual(["chain", "tree"]);
    const errors = r.diagnostics.filter((d) => d.code === "budget.compile_exceeded");
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toContain("tool wide");
  });
});

describe("--inline-refs: inlining for consumers without $defs", () => {
  test("references are replaced by copies and $defs goes", () => {
    const r = run({ maxToolBytes: 0, inlineRefs: 1_000_000 });
    const chain = tool(r, "chain") as ToolDefinition;
    expect(chain.inputSchema.$defs).toBeUndefined();
    expect(JSON.stringify(chain.inputSchema)).not.toContain("$ref");
    const a = chain.inputSchema.properties.a as {
      properties: { b: { properties: { c: unknown } } };
    };
    expect(a.properties.b.properties.c).toHaveProperty("properties.d.enum", ["x", "y"]);
    expect(metaSchemaErrors(chain.inputSchema)).toEqual([]);
  });

  test("recursion is cut at the repeat, with a warning", () => {
    const r = run({ maxToolBytes: 0, inlineRefs: 1_000_000 });
    const tree = tool(r, "tree") as ToolDefinition;
    expect(JSON.stringify(tree.inputSchema)).not.toContain("$ref");
    expect(tree.inputSchema.properties.kids).toEqual({
      type: "array",
      items: {
        type: "object",
        properties: {
          label: { type: "string" },
          kids: {
            type: "array",
            items: { type: "object", description: "Recursive schema: the repeat is not inlined." },
          },
        },
      },
    });
    const cut = r.diagnostics.find((d) => d.code === "inline.recursion_cut");
    expect(cut?.path).toBe("b.json#/paths/~1tree/post");
  });

  test("a tool whose inlined form passes the inline budget keeps $defs, with a warning", () => {
    const r = run({ maxToolBytes: 0, inlineRefs: 1500 });
    const chain = tool(r, "chain") as ToolDefinition;
    expect(Object.keys(chain.inputSchema.$defs as object)).toEqual(["A", "B", "C", "D"]);
    expect(
      r.diagnostics.some((d) => d.code === "inline.kept_defs" && d.message.includes("chain")),
    ).toBe(true);
  });
});
