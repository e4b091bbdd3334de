import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { SCHEMA_FILES, schemaFileContent } from "../../shared/tools/index.ts";
import { REPO_ROOT, validTool } from "./helpers.ts";

function readSchema(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(REPO_ROOT, "schemas", `${file}.json`), "utf8"));
}

describe("schemas/ files", () => {
  test("the four files exist and equal the TypeBox output (run scripts/export-tool-schemas.ts)", () => {
    expect(Object.keys(SCHEMA_FILES).sort()).toEqual([
      "compile-result",
      "confirm-condition",
      "diagnostic",
      "tool-definition.v1",
    ]);
    for (const file of Object.keys(SCHEMA_FILES)) {
      expect(readSchema(file)).toEqual(schemaFileContent(file));
      // The written bytes are the canonical serialisation, so a reformat is also caught.
      expect(readFileSync(join(REPO_ROOT, "schemas", `${file}.json`), "utf8")).toBe(
        `${JSON.stringify(schemaFileContent(file), null, 2)}\n`,
      );
    }
  });

  test("each file compiles under ajv 2020-12 and decides like the validator", () => {
    const ajv = new Ajv2020({ strict: false });
    const tool = ajv.compile(readSchema("tool-definition.v1"));
    expect(tool(validTool())).toBe(true);
    expect(tool(validTool({ name: "x".repeat(65) }))).toBe(false);
    const result = ajv.compile(readSchema("compile-result"));
    expect(result({ tools: [validTool()], diagnostics: [] })).toBe(true);
    expect(result({ tools: [], diagnostics: [], extra: 1 })).toBe(false);
    expect(result({ tools: [] })).toBe(false);
  });

  test("the tool-definition file states the spec's constraints literally", () => {
    const s = readSchema("tool-definition.v1") as {
      $schema: string;
      required: string[];
      additionalProperties: boolean;
      properties: Record<string, Record<string, unknown>>;
    };
    expect(s.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(s.additionalProperties).toBe(false);
    expect([...s.required].sort()).toEqual(
      [
        "schemaVersion",
        "name",
        "source",
        "method",
        "path",
        "description",
        "scope",
        "risk",
        "confirmRequired",
        "rateLimitPerMin",
        "requiresSubject",
        "sensitive",
        "readonly",
        "idempotent",
        "timeoutMs",
        "confirmPrompt",
        "context",
        "extensions",
        "inputSchema",
        "paramIn",
      ].sort(),
    );
    const p = s.properties;
    expect(p.schemaVersion?.const).toBe("service.tool-definition.v1");
    expect(p.name).toMatchObject({
      minLength: 1,
      maxLength: 64,
      pattern: "^[A-Za-z_][A-Za-z0-9_]{0,63}$",
    });
    expect(p.source?.enum).toEqual(["openapi", "overlay", "sdk", "mcp", "manual"]);
    expect(p.method?.enum).toEqual(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);
    expect(p.path).toMatchObject({ minLength: 1, pattern: "^/" });
    expect(p.description).toMatchObject({ minLength: 1, maxLength: 500 });
    expect(p.scope).toMatchObject({ minLength: 1, maxLength: 191 });
    expect(p.risk?.enum).toEqual(["low", "medium", "high"]);
    expect(p.rateLimitPerMin).toMatchObject({ type: "integer", minimum: 0 });
    expect(p.timeoutMs).toMatchObject({ type: "integer", minimum: 0, maximum: 60000 });
    expect(p.confirmPrompt).toMatchObject({ maxLength: 200 });
    expect(p.confirmWhen).toMatchObject({ maxItems: 20 });
    expect(p.context).toMatchObject({ maxItems: 50, items: { minLength: 1, maxLength: 100 } });
    expect(p.extensions).toMatchObject({ propertyNames: { pattern: "^x-(ai|service|business)-" } });
    expect(p.inputSchema).toMatchObject({
      required: ["type", "properties"],
      additionalProperties: true,
      properties: { type: { const: "object" }, required: { uniqueItems: true } },
    });
    expect(p.paramIn).toMatchObject({
      additionalProperties: { enum: ["query", "body", "path", "header"] },
    });
  });

  test("condition, diagnostic and compile-result files state their constraints", () => {
    const c = readSchema("confirm-condition") as Record<string, unknown> & {
      properties: Record<string, Record<string, unknown>>;
    };
    expect(c.additionalProperties).toBe(false);
    expect(c.required).toEqual(["param", "op"]);
    expect(c.properties.param).toMatchObject({ minLength: 1, maxLength: 191 });
    expect(c.properties.label).toMatchObject({ minLength: 1, maxLength: 120 });
    expect(c.properties.op?.enum).toHaveLength(16);
    const d = readSchema("diagnostic") as Record<string, unknown> & {
      properties: Record<string, Record<string, unknown>>;
    };
    expect(d.additionalProperties).toBe(false);
    expect(d.required).toEqual(["severity", "path", "code", "message"]);
    expect(d.properties.severity?.enum).toEqual(["error", "warning", "info"]);
    for (const k of ["path", "code", "message", "suggestion"])
      expect(d.properties[k]).toMatchObject({ minLength: 1 });
    const r = readSchema("compile-result") as Record<string, unknown>;
    expect(r.additionalProperties).toBe(false);
    expect(r.required).toEqual(["tools", "diagnostics"]);
  });
});
