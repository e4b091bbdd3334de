import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  type CompileInput,
  type CompileResult,
  compile,
  compileFromFiles,
  type Diagnostic,
  parseDocumentText,
  serializeResult,
  type ToolDefinition,
  validateCompileResult,
} from "../../shared/tools/index.ts";
import { FIXTURES } from "./helpers.ts";

let result: CompileResult;
const byName = (name: string): ToolDefinition => {
  const t = result.tools.find((x) => x.name === name);
  if (!t) throw new Error(`no tool ${name}`);
  return t;
};
const diags = (code: string, r: CompileResult = result): Diagnostic[] =>
  r.diagnostics.filter((d) => d.code === code);
const files = [
  "shop.yaml",
  "legacy.swagger.yaml",
  "mcp-tools.json",
  "manual-tools.yaml",
  "sdk-tools.ts",
];

function loadDoc(file: string) {
  const parsed = parseDocumentText(readFileSync(join(FIXTURES, file), "utf8"));
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.doc;
}

beforeAll(async () => {
  result = await compileFromFiles(
    files.map((f) => ({ file: f })),
    [],
    FIXTURES,
  );
});

describe("compiler: whole fixture set", () => {
  test("output is a valid compileResult with unique, sorted names", () => {
    expect(validateCompileResult(result)).toEqual([]);
    const names = result.tools.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual(names);
  });

  test("same inputs give byte-identical output", async () => {
    const again = await compileFromFiles(
      files.map((f) => ({ file: f })),
      [],
      FIXTURES,
    );
    expect(serializeResult(again)).toBe(serializeResult(result));
  });

  test("sources are recorded", () => {
    expect(byName("get_order").source).toBe("openapi");
    expect(byName("read_file").source).toBe("mcp");
    expect(byName("notify_team").source).toBe("manual");
    expect(byName("refund_order").source).toBe("sdk");
  });
});

describe("compiler: names", () => {
  test("operationId is sanitised, with an info diagnostic", () => {
    expect(byName("get_order").path).toBe("/orders/{id}");
    expect(diags("name.sanitized").some((d) => d.message.includes('"get-order"'))).toBe(true);
  });

  test("no operationId: name from method and path", () => {
    expect(byName("delete_orders_by_id").method).toBe("DELETE");
    expect(diags("name.generated")[0]?.path).toBe("shop.yaml#/paths/~1orders~1{id}/delete");
  });

  test("too long names get a hash suffix and stay within 64", () => {
    const long = result.tools.find((t) => t.path === "/long");
    expect(long?.name).toHaveLength(64);
    expect(long?.name).toMatch(/^thisOperationIdIsWayTooLong\w*_[0-9a-f]{8}$/);
    expect(diags("name.truncated")).toHaveLength(1);
  });

  test("colliding names all get stable suffixes that survive reordering", () => {
    const dups = result.tools.filter((t) => t.name.startsWith("duplicate_"));
    expect(dups.map((t) => t.path).sort()).toEqual(["/dup-a", "/dup-b"]);
    expect(diags("name.collision")).toHaveLength(2);
    const doc = loadDoc("shop.yaml") as { paths: Record<string, unknown> };
    const reversed = { ...doc, paths: Object.fromEntries(Object.entries(doc.paths).reverse()) };
    const a = compile([{ kind: "openapi", label: "x", doc }]);
    const b = compile([{ kind: "openapi", label: "x", doc: reversed }]);
    expect(JSON.stringify(b.tools)).toBe(JSON.stringify(a.tools));
  });
});

describe("compiler: inputSchema merging", () => {
  test("path, query and header parameters merge; credentials and transport headers stay out", () => {
    const t = byName("get_order");
    expect(t.paramIn).toEqual({ id: "path", "X-Trace": "header", filter_status_: "query" });
    expect(t.inputSchema.required).toEqual(["id"]);
    expect(t.inputSchema.properties.id).toEqual({ type: "string", description: "Order id" });
    const excluded = diags("param.credential_excluded").filter((d) =>
      d.path.includes("~1orders~1{id}/get"),
    );
    expect(excluded.map((d) => d.path.split("/").pop())).toEqual(["0", "1", "2", "3"]);
    expect(diags("param.header_ignored")).toHaveLength(1);
    expect(t.extensions["x-service-wire-names"]).toEqual({
      filter_status_: { in: "query", name: "filter[status]" },
    });
  });

  test("a clash between path and body is renamed, never dropped, with the wire name kept", () => {
    const t = byName("replaceOrder");
    expect(t.paramIn).toEqual({ id__path: "path", id__body: "body", amount: "body" });
    expect(t.inputSchema.required).toEqual(["id__path", "id__body", "amount"]);
    expect(t.extensions["x-service-wire-names"]).toEqual({
      id__path: { in: "path", name: "id" },
      id__body: { in: "body", name: "id" },
    });
    expect(
      diags("param.renamed").some((d) => d.path.endsWith("/put") && d.path.startsWith("shop.yaml")),
    ).toBe(true);
  });

  test("Swagger 2.0 body parameters spread and clash the same way", () => {
    const t = byName("putThing");
    expect(t.paramIn).toEqual({ id__path: "path", name: "body", id__body: "body" });
    expect(t.inputSchema.required).toEqual(["id__path", "name"]);
  });

  test("form-urlencoded bodies spread; multipart and file parts are reported", () => {
    expect(byName("submitForm").paramIn).toEqual({ name: "body", age: "body" });
    expect(byName("submitForm").extensions["x-service-request-body"]).toMatchObject({
      encoding: "form",
    });
    expect(byName("upload").inputSchema.properties.file).toEqual({
      type: "string",
      format: "binary",
    });
    expect(diags("body.multipart")).toHaveLength(2);
    expect(diags("body.file_part")).toHaveLength(2);
    const legacy = byName("uploadFile");
    expect(legacy.paramIn).toEqual({ file: "body", title: "body" });
    expect(legacy.inputSchema.required).toEqual(["file"]);
  });

  test("non-object bodies go under `body`; oneOf is kept; allOf is merged", () => {
    expect(byName("rawText").paramIn).toEqual({ body: "body" });
    expect(byName("choice").inputSchema.properties.body).toHaveProperty("oneOf");
    const combined = byName("combined");
    expect(combined.paramIn).toEqual({ a: "body", b: "body" });
    expect(combined.inputSchema.properties).toEqual({
      a: { type: "string" },
      b: { type: "integer" },
    });
  });
});

describe("compiler: $ref handling", () => {
  test("references stay references: $defs holds each reached definition once", () => {
    const t = byName("saveTree");
    // The body is a $ref to a plain object, so it still spreads into inputs.
    expect(t.paramIn).toEqual({ label: "body", children: "body" });
    expect(t.inputSchema.properties.children).toEqual({
      type: "array",
      items: { $ref: "#/$defs/Node" },
    });
    // Recursion needs nothing special: the definition refers to itself by name.
    expect(t.inputSchema.$defs).toEqual({
      Node: {
        type: "object",
        properties: {
          label: { type: "string" },
          children: { type: "array", items: { $ref: "#/$defs/Node" } },
        },
      },
    });
    // Only what a tool reaches: a tool without references carries no $defs.
    expect(byName("get_order").inputSchema.$defs).toBeUndefined();
  });

  test("relative-file refs are resolved (with refs inside that file)", () => {
    const t = byName("shipTo");
    expect(t.inputSchema.properties).toEqual({
      city: { type: "string" },
      country: { $ref: "#/$defs/shop-parts.Country" },
    });
    expect(t.inputSchema.$defs).toEqual({
      "shop-parts.Country": { type: "string", enum: ["DE", "FR"] },
    });
  });

  test("remote refs are refused with a diagnostic at the $ref, not fetched", () => {
    expect(byName("remoteThing").inputSchema.properties.body).toEqual({});
    expect(diags("ref.remote_refused")[0]?.path).toBe(
      "shop.yaml#/paths/~1remote/post/requestBody/content/application~1json/schema/$ref",
    );
  });

  test("an unresolvable ref and a file ref without a file are errors", () => {
    const doc = {
      openapi: "3.0.3",
      info: { title: "t", version: "1" },
      paths: {
        "/a": {
          post: {
            operationId: "a",
            requestBody: { content: { "application/json": { schema: { $ref: "#/nope" } } } },
          },
        },
        "/b": {
          post: {
            operationId: "b",
            requestBody: { content: { "application/json": { schema: { $ref: "x.yaml#/A" } } } },
          },
        },
      },
    };
    const r = compile([{ kind: "openapi", label: "mem", doc }]);
    expect(diags("ref.unresolved", r)).toHaveLength(1);
    expect(diags("ref.file_unreadable", r)).toHaveLength(1);
    expect(r.tools).toHaveLength(2);
  });

  test("mutually recursive and self-referencing $ref chains terminate", () => {
    const doc = {
      openapi: "3.1.0",
      info: { title: "t", version: "1" },
      components: {
        schemas: {
          A: { type: "object", properties: { b: { $ref: "#/components/schemas/B" } } },
          B: { type: "object", properties: { a: { $ref: "#/components/schemas/A" } } },
          Loop: { $ref: "#/components/schemas/Loop" },
        },
      },
      paths: {
        "/a": {
          post: {
            operationId: "a",
            requestBody: {
              content: { "application/json": { schema: { $ref: "#/components/schemas/A" } } },
            },
          },
        },
        "/b": {
          post: {
            operationId: "b",
            requestBody: {
              content: { "application/json": { schema: { $ref: "#/components/schemas/B" } } },
            },
          },
        },
        "/l": {
          post: {
            operationId: "l",
            requestBody: {
              content: { "application/json": { schema: { $ref: "#/components/schemas/Loop" } } },
            },
          },
        },
      },
    };
    const r = compile([{ kind: "openapi", label: "mem", doc }]);
    expect(validateCompileResult(r)).toEqual([]);
    expect(r.tools.map((t) => t.name)).toEqual(["a", "b", "l"]);
    for (const t of r.tools) {
      for (const m of JSON.stringify(t.inputSchema).matchAll(/"#\/\$defs\/([^"]+)"/g)) {
        expect(Object.keys(t.inputSchema.$defs as object)).toContain(m[1] as string);
      }
    }
  });
});

describe("compiler: descriptions, risk, overrides, scope, extensions", () => {
  test("description falls back to summary, then METHOD path; long ones are cut at a word", () => {
    expect(byName("get_order").description).toBe("Get an order");
    expect(byName("delete_orders_by_id").description).toBe("DELETE /orders/{id}");
    const reports = byName("listReports").description;
    expect(reports.length).toBeLessThanOrEqual(500);
    expect(reports.endsWith("…")).toBe(true);
    expect(reports.at(-2)).not.toBe(" ");
    expect(diags("description.truncated")).toHaveLength(1);
  });

  test("risk defaults from the method", () => {
    expect(byName("get_order")).toMatchObject({
      risk: "low",
      readonly: true,
      idempotent: true,
      confirmRequired: false,
    });
    expect(byName("replaceOrder")).toMatchObject({
      risk: "medium",
      readonly: false,
      idempotent: true,
    });
    expect(byName("submitForm")).toMatchObject({
      risk: "medium",
      readonly: false,
      idempotent: false,
    });
    const del = byName("delete_orders_by_id");
    expect(del).toMatchObject({ risk: "high", idempotent: true, confirmRequired: true });
    expect(del.confirmPrompt.length).toBeGreaterThan(0);
  });

  test("a GET that reads like a mutation is warned about, not marked read-only", () => {
    expect(byName("cancelOrder")).toMatchObject({ readonly: false, risk: "medium" });
    expect(diags("risk.get_looks_mutating").map((d) => d.path)).toEqual([
      "shop.yaml#/paths/~1orders~1{id}~1cancel/get",
    ]);
  });

  test("x-service-* overrides apply; bad ones are reported and ignored; exclude skips", () => {
    expect(byName("pay")).toMatchObject({
      risk: "high",
      confirmRequired: true,
      requiresSubject: true,
      sensitive: true,
      scope: "payments",
      confirmPrompt: "Send money?",
      confirmWhen: [{ param: "amount", op: ">", value: 1000, label: "large payment" }],
    });
    expect(byName("pay").extensions).not.toHaveProperty("x-service-risk");
    expect(byName("listReports")).toMatchObject({
      rateLimitPerMin: 10,
      timeoutMs: 30000,
      readonly: true,
    });
    expect(byName("badOverride").risk).toBe("medium");
    expect(diags("override.invalid").map((d) => d.path.split("/").pop())).toEqual([
      "x-service-timeoutMs",
      "x-service-risk",
    ]);
    expect(result.tools.some((t) => t.path === "/hidden")).toBe(false);
    expect(diags("operation.excluded")).toHaveLength(1);
    expect(diags("operation.method_unsupported")).toHaveLength(1);
  });

  test("scope from OAuth2 scopes, else first tag; context from tags", () => {
    expect(byName("replaceOrder").scope).toBe("orders.write");
    expect(byName("get_order").scope).toBe("orders.read");
    expect(byName("putThing").scope).toBe("default");
    expect(byName("get_order").context).toEqual(["orders"]);
    const tagged = compile([
      {
        kind: "openapi",
        label: "m",
        doc: {
          openapi: "3.0.0",
          info: { title: "t", version: "1" },
          paths: { "/x": { get: { operationId: "x", tags: ["alpha", "beta"] } } },
        },
      },
    ]);
    expect(tagged.tools[0]).toMatchObject({ scope: "alpha", context: ["alpha", "beta"] });
  });

  test("extensions keep x-ai-/x-service-/x-business- keys and report the rest", () => {
    expect(byName("delete_orders_by_id").extensions).toEqual({ "x-ai-hint": "ask twice" });
    expect(diags("extension.dropped")[0]?.message).toContain("x-other-vendor");
  });
});

describe("compiler: MCP, manual and SDK sources", () => {
  test("MCP annotations map to readonly, risk and idempotent; defaults are destructive", () => {
    expect(byName("read_file")).toMatchObject({
      readonly: true,
      risk: "low",
      idempotent: true,
      method: "POST",
      path: "/mcp/tools/read_file",
    });
    expect(byName("write_file")).toMatchObject({
      readonly: false,
      risk: "medium",
      idempotent: true,
      confirmRequired: false,
    });
    expect(byName("rm_rf")).toMatchObject({
      readonly: false,
      risk: "high",
      confirmRequired: true,
      path: "/mcp/tools/rm-rf",
    });
    expect(byName("rm_rf").extensions["x-service-mcp"]).toEqual({ tool: "rm-rf", openWorld: true });
    expect(diags("mcp.unannotated")).toHaveLength(1);
    expect(diags("mcp.schema_fixed")).toHaveLength(1);
    expect(diags("mcp.tool_invalid")[0]?.path).toBe("mcp-tools.json#/tools/3/inputSchema");
  });

  test("manual definitions get defaults; invalid ones are skipped with errors", () => {
    expect(byName("lookup")).toMatchObject({
      method: "GET",
      risk: "low",
      readonly: true,
      scope: "default",
    });
    expect(byName("notify_team").confirmWhen).toEqual([
      { param: "text", op: "not_empty", label: "message" },
    ]);
    expect(diags("manual.tool_invalid")[0]?.path).toBe("manual-tools.yaml#/tools/2/name");
  });

  test("defineTool() exports are collected from SDK modules", () => {
    expect(byName("refund_order")).toMatchObject({
      risk: "high",
      confirmRequired: true,
      paramIn: { id: "path", amount: "body" },
    });
    expect(byName("ping")).toMatchObject({ method: "GET", path: "/ping" });
  });

  test("errors are present, so the CLI would exit 1", () => {
    expect(result.diagnostics.some((d) => d.severity === "error")).toBe(true);
  });
});

describe("compiler: bad inputs never throw", () => {
  const cases: [string, CompileInput][] = [
    ["not an object", { kind: "openapi", label: "m", doc: [1, 2] }],
    ["unknown version", { kind: "openapi", label: "m", doc: { openapi: "4.0.0", paths: {} } }],
    ["paths not an object", { kind: "openapi", label: "m", doc: { openapi: "3.0.0", paths: 7 } }],
    [
      "operation not an object",
      {
        kind: "openapi",
        label: "m",
        doc: { openapi: "3.0.0", paths: { "/a": { get: 1 }, b: {} } },
      },
    ],
    [
      "parameter garbage",
      {
        kind: "openapi",
        label: "m",
        doc: {
          openapi: "3.0.0",
          paths: { "/a": { get: { parameters: [1, { in: "query" }, { $ref: "#/x" }] } } },
        },
      },
    ],
    ["mcp garbage", { kind: "mcp", label: "m", doc: { tools: [null, { name: 3 }] } }],
    ["manual garbage", { kind: "manual", label: "m", doc: "nope" }],
  ];
  for (const [label, input] of cases) {
    test(label, () => {
      const r = compile([input]);
      expect(validateCompileResult(r)).toEqual([]);
      expect(r.diagnostics.length).toBeGreaterThan(0);
    });
  }

  test("unreadable, unparsable and unknown files become diagnostics", async () => {
    const r = await compileFromFiles(
      [
        { file: "missing.yaml" },
        { file: "shop-parts.yaml" },
        { file: "mcp-server.ts", kind: "manual" },
      ],
      [],
      FIXTURES,
    );
    expect(r.diagnostics.map((d) => d.code)).toEqual([
      "input.read_failed",
      "input.unknown_format",
      "input.parse_failed",
    ]);
  });
});
