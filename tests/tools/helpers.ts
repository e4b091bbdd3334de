import { expect } from "bun:test";
import {
  type CompileResult,
  metaSchemaErrors,
  type ToolDefinition,
  validateCompileResult,
} from "../../shared/tools/index.ts";

/** A valid record to mutate in bound tests. */
export function validTool(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const base: ToolDefinition = {
    schemaVersion: "service.tool-definition.v1",
    name: "get_pet",
    source: "openapi",
    method: "GET",
    path: "/pets/{id}",
    description: "Fetch one pet.",
    scope: "pets",
    risk: "low",
    confirmRequired: false,
    rateLimitPerMin: 0,
    requiresSubject: false,
    sensitive: false,
    readonly: true,
    idempotent: true,
    timeoutMs: 30000,
    confirmPrompt: "",
    context: ["pets"],
    extensions: {},
    inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    paramIn: { id: "path" },
  };
  return { ...base, ...overrides };
}

/** Repo root, resolved from this file so tests do not depend on the working directory. */
export const REPO_ROOT = new URL("../../", import.meta.url).pathname;
export const FIXTURES = new URL("../fixtures/tools/", import.meta.url).pathname;

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** Every operation of a document must become a tool or carry a diagnostic at its pointer. */
export function expectNothingDroppedSilently(doc: unknown, label: string, r: CompileResult): void {
  const paths = (doc as { paths?: Record<string, Record<string, unknown>> }).paths ?? {};
  const emitted = new Set(r.tools.map((t) => `${t.method} ${t.path}`));
  const diagnosed = new Set(r.diagnostics.map((d) => d.path));
  for (const [path, item] of Object.entries(paths)) {
    if (!item || typeof item !== "object" || path.startsWith("x-")) continue;
    for (const m of METHODS) {
      if (!(m in item)) continue;
      const ptr = `${label}#/paths/${path.replaceAll("~", "~0").replaceAll("/", "~1")}/${m}`;
      const ok =
        emitted.has(`${m.toUpperCase()} ${path}`) || [...diagnosed].some((p) => p.startsWith(ptr));
      if (!ok) throw new Error(`${m.toUpperCase()} ${path} vanished without a diagnostic`);
    }
  }
}

/**
 * What every compile output must be: a valid compileResult with unique names, every inputSchema
 * valid JSON Schema 2020-12 (Ajv's meta-schema), every `#/$defs/X` it uses present in its $defs.
 */
export function expectSoundOutput(r: CompileResult): void {
  expect(validateCompileResult(r)).toEqual([]);
  const names = r.tools.map((t) => t.name);
  expect(new Set(names).size).toBe(names.length);
  for (const t of r.tools) {
    const errors = metaSchemaErrors(t.inputSchema);
    if (errors.length > 0) throw new Error(`${t.name}: ${JSON.stringify(errors[0])}`);
    const defs = Object.keys((t.inputSchema.$defs as object | undefined) ?? {});
    for (const m of JSON.stringify(t.inputSchema).matchAll(/"\$ref":"#\/\$defs\/([^"]+)"/g))
      if (!defs.includes(m[1] as string)) throw new Error(`${t.name}: $defs lacks ${m[1]}`);
  }
}
