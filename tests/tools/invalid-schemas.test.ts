import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type CompileResult, compile, metaSchemaErrors } from "../../shared/tools/index.ts";
import { expectSoundOutput, FIXTURES } from "./helpers.ts";

/**
 * The three descriptions of the APIs.guru directory whose source schemas are not valid JSON
 * Schema 2020-12, cut down to the operation and schemas that carry the problem
 * (tests/fixtures/tools/invalid-schemas/). Each must give exactly one schema.invalid warning at
 * the pointer of the bad keyword, and tools whose inputSchema passes the 2020-12 meta-schema.
 */
function compileFixture(file: string): CompileResult {
  const doc = JSON.parse(readFileSync(join(FIXTURES, "invalid-schemas", file), "utf8"));
  return compile([{ kind: "openapi", label: file, doc }]);
}

function invalid(r: CompileResult) {
  return r.diagnostics.filter((d) => d.code === "schema.invalid");
}

describe("real-world invalid source schemas: one warning each, valid output", () => {
  test("api.video: a non-string pattern is removed, the rest of the property stays", () => {
    const r = compileFixture("api-video.json");
    expectSoundOutput(r);
    expect(invalid(r).map((d) => [d.severity, d.path])).toEqual([
      [
        "warning",
        "api-video.json#/components/schemas/video-thumbnail-pick-payload/properties/timecode/pattern",
      ],
    ]);
    expect(invalid(r)[0]?.message).toContain("pattern must be string");
    const t = r.tools[0];
    expect(metaSchemaErrors(t?.inputSchema)).toEqual([]);
    expect(t?.inputSchema.properties.timecode).toMatchObject({ type: "string" });
    expect(t?.inputSchema.properties.timecode).not.toHaveProperty("pattern");
  });

  test("cloudmersive OCR: a media type given as a schema type is removed, the $ref stays", () => {
    const r = compileFixture("cloudmersive-ocr.json");
    expectSoundOutput(r);
    expect(invalid(r).map((d) => [d.severity, d.path])).toEqual([
      [
        "warning",
        "cloudmersive-ocr.json#/paths/~1ocr~1photo~1recognize~1form/post/parameters/0/schema/type",
      ],
    ]);
    const t = r.tools[0];
    expect(metaSchemaErrors(t?.inputSchema)).toEqual([]);
    expect(t?.inputSchema.properties.formTemplateDefinition).toEqual({
      $ref: "#/$defs/FormDefinitionTemplate",
      description: "Form field definitions",
    });
  });

  test("codat accounting: a schema nested where a type name belongs is one problem, one warning", () => {
    // Item/definitions/itemType is checked twice: inside Item's own definitions, and as the
    // definition Item's `type` property refers to. Both copies are repaired; one warning.
    const r = compileFixture("codat-accounting.json");
    expectSoundOutput(r);
    expect(invalid(r).map((d) => [d.severity, d.path])).toEqual([
      ["warning", "codat-accounting.json#/components/schemas/Item/definitions/itemType/type"],
    ]);
    expect(invalid(r)[0]?.message).toContain("type must be equal to one of the allowed values");
    const t = r.tools[0];
    expect(metaSchemaErrors(t?.inputSchema)).toEqual([]);
    const defs = t?.inputSchema.$defs as Record<string, unknown>;
    expect(defs["components.schemas.Item.definitions.itemType"]).toEqual({});
  });
});

describe("one problem at one source pointer gives one diagnostic", () => {
  test("an invalid path-level parameter shared by two operations is reported once; both tools are repaired", () => {
    const doc = {
      openapi: "3.1.0",
      info: { title: "x", version: "1" },
      paths: {
        "/a": {
          parameters: [{ name: "limit", in: "query", schema: { type: "integer", minimum: "one" } }],
          get: { operationId: "listA" },
          delete: { operationId: "clearA" },
        },
      },
    };
    const r = compile([{ kind: "openapi", label: "shared.json", doc }]);
    expectSoundOutput(r);
    expect(r.tools.map((t) => t.inputSchema.properties.limit)).toEqual([
      { type: "integer" },
      { type: "integer" },
    ]);
    expect(invalid(r).map((d) => d.path)).toEqual([
      "shared.json#/paths/~1a/parameters/0/schema/minimum",
    ]);
  });

  test("different problems, or the same problem in another document, are each reported", () => {
    const doc = (pattern: unknown) => ({
      openapi: "3.1.0",
      info: { title: "x", version: "1" },
      paths: {
        "/a": {
          get: {
            operationId: "getA",
            parameters: [
              { name: "p", in: "query", schema: { type: "string", pattern } },
              { name: "q", in: "query", schema: { type: "strnig" } },
            ],
          },
        },
      },
    });
    const r = compile([
      { kind: "openapi", label: "one.json", doc: doc(1) },
      { kind: "openapi", label: "two.json", doc: doc(2) },
    ]);
    expect(invalid(r).map((d) => d.path)).toEqual([
      "one.json#/paths/~1a/get/parameters/0/schema/pattern",
      "one.json#/paths/~1a/get/parameters/1/schema/type",
      "two.json#/paths/~1a/get/parameters/0/schema/pattern",
      "two.json#/paths/~1a/get/parameters/1/schema/type",
    ]);
  });
});
