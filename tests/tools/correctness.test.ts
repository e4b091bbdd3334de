import { describe, expect, test } from "bun:test";
import { compile, metaSchemaErrors } from "../../shared/tools/index.ts";
import { expectSoundOutput } from "./helpers.ts";

describe("extensions wherever OpenAPI allows them", () => {
  const doc = {
    openapi: "3.0.3",
    info: { title: "x", version: "1", "x-logo": { url: "l" } },
    "x-root": true,
    servers: [{ url: "https://api.example.com", "x-region": "eu" }],
    components: {
      "x-components": 1,
      schemas: {
        Item: { type: "object", "x-schema": 1, properties: { label: { type: "string" } } },
      },
      parameters: { Q: { name: "q", in: "query", "x-param": 1, schema: { type: "string" } } },
    },
    tags: [{ name: "items", "x-tag": 1 }],
    paths: {
      "x-codegen-contextRoot": "/v1",
      "x-paths-note": { anything: true },
      "/items/{id}": {
        "x-path-item": { owner: "team" },
        summary: "items",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        get: {
          operationId: "getItem",
          "x-operation": 1,
          parameters: [{ $ref: "#/components/parameters/Q" }],
          responses: { "200": { description: "ok", "x-response": 1 }, "x-responses": 1 },
        },
        put: {
          operationId: "putItem",
          requestBody: {
            "x-body": 1,
            content: {
              "application/json": {
                "x-media": 1,
                schema: { $ref: "#/components/schemas/Item" },
              },
            },
          },
          responses: { "204": { description: "done" } },
        },
      },
    },
  };

  test("x- keys in the Paths Object, path items, operations, bodies and components are no error", () => {
    const r = compile([{ kind: "openapi", label: "ext.json", doc }]);
    expect(r.diagnostics.filter((d) => d.severity !== "info")).toEqual([]);
    expect(r.tools.map((t) => t.name)).toEqual(["getItem", "putItem"]);
    expect(r.tools[1]?.paramIn).toEqual({ id: "path", label: "body" });
    // The operation's own x- keys are reported once as not copied, as before.
    expect(r.diagnostics.filter((d) => d.code === "extension.dropped")).toHaveLength(1);
    expectSoundOutput(r);
  });

  test("Swagger 2.0 Paths Objects may carry x- keys too", () => {
    const swagger = {
      swagger: "2.0",
      info: { title: "x", version: "1" },
      paths: {
        "x-ms-note": "extension",
        "/a": { get: { operationId: "a", responses: { "200": { description: "ok" } } } },
      },
    };
    const r = compile([{ kind: "openapi", label: "s.json", doc: swagger }]);
    expect(r.tools.map((t) => t.name)).toEqual(["a"]);
    expect(r.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });
});

describe("every emitted inputSchema is valid JSON Schema 2020-12", () => {
  const doc = {
    openapi: "3.1.0",
    info: { title: "x", version: "1" },
    components: {
      schemas: {
        Bad: {
          type: "object",
          properties: {
            kind: { type: "strnig" },
            code: { type: "string", pattern: 5 },
            fine: { type: "integer", minimum: 1 },
          },
          required: "kind",
        },
      },
    },
    paths: {
      "/bad": {
        post: {
          operationId: "bad",
          parameters: [{ name: "n", in: "query", schema: { type: "number", minimum: "zero" } }],
          requestBody: {
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  properties: { item: { $ref: "#/components/schemas/Bad" }, items: { items: 3 } },
                },
              },
            },
          },
        },
      },
    },
  };

  test("an invalid source schema becomes a warning at its JSON pointer, and the output is valid", () => {
    const r = compile([{ kind: "openapi", label: "bad.json", doc }]);
    expectSoundOutput(r);
    const t = r.tools[0];
    expect(metaSchemaErrors(t?.inputSchema)).toEqual([]);
    const paths = r.diagnostics.filter((d) => d.code === "schema.invalid").map((d) => d.path);
    expect(paths.sort()).toEqual(
      [
        "bad.json#/components/schemas/Bad/properties/kind/type",
        "bad.json#/components/schemas/Bad/properties/code/pattern",
        "bad.json#/components/schemas/Bad/required",
        "bad.json#/paths/~1bad/post/parameters/0/schema/minimum",
        "bad.json#/paths/~1bad/post/requestBody/content/application~1json/schema/properties/items/items",
      ].sort(),
    );
    expect(
      r.diagnostics.every((d) => d.code !== "schema.invalid" || d.severity === "warning"),
    ).toBe(true);
    // Only the invalid keyword goes; the rest of the schema stays.
    const defs = t?.inputSchema.$defs as Record<string, { properties: unknown }> | undefined;
    const bad = defs?.Bad;
    expect(bad?.properties).toEqual({
      kind: {},
      code: { type: "string" },
      fine: { type: "integer", minimum: 1 },
    });
    expect(t?.inputSchema.properties.n).toEqual({ type: "number" });
    expect(t?.inputSchema.properties.items).toEqual({ items: {} });
  });

  test("MCP and manual input schemas are checked the same way", () => {
    const mcp = {
      tools: [
        {
          name: "t",
          annotations: { readOnlyHint: true },
          inputSchema: { type: "object", properties: { a: { type: "bogus" } } },
        },
      ],
    };
    const r = compile([{ kind: "mcp", label: "mcp.json", doc: mcp }]);
    expectSoundOutput(r);
    expect(r.diagnostics.find((d) => d.code === "schema.invalid")?.path).toBe(
      "mcp.json#/tools/0/inputSchema/properties/a/type",
    );
  });
});
