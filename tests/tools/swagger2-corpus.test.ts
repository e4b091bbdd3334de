import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { compile, parseDocumentText, serializeResult } from "../../shared/tools/index.ts";
import { expectNothingDroppedSilently, expectSoundOutput, REPO_ROOT } from "./helpers.ts";

/**
 * Swagger 2.0 descriptions found in npm packages (devDependencies):
 * - @okta/openapi: dist/spec.json, Okta's management API (340 operations);
 * - @microsoft.azure/autorest.testserver: swagger/*.json, Microsoft's AutoRest corpus
 *   (74 documents, 1,051 operations; Azure extensions, external example refs, UTF-8 BOMs).
 */
const OKTA = join(REPO_ROOT, "node_modules/@okta/openapi/dist/spec.json");
const AUTOREST = join(REPO_ROOT, "node_modules/@microsoft.azure/autorest.testserver/swagger");

function operations(doc: unknown): number {
  const paths = (doc as { paths?: Record<string, Record<string, unknown>> }).paths ?? {};
  const methods = ["get", "put", "post", "delete", "options", "head", "patch"];
  return Object.values(paths).reduce(
    (n, item) => n + methods.filter((m) => item && typeof item === "object" && m in item).length,
    0,
  );
}

function compileFile(file: string, label: string) {
  const parsed = parseDocumentText(readFileSync(file, "utf8"));
  if (!parsed.ok) throw new Error(`${label}: ${parsed.error}`);
  expect((parsed.doc as { swagger?: string }).swagger).toBe("2.0");
  const input = { kind: "openapi" as const, label, doc: parsed.doc, docId: file };
  const result = compile([input]);
  return { doc: parsed.doc, input, result };
}

describe("Swagger 2.0: a real corpus from npm packages", () => {
  test("Okta's management API: 340 operations, 340 tools, no errors", () => {
    const { doc, input, result } = compileFile(OKTA, "okta.json");
    expect(operations(doc)).toBe(340);
    expect(result.tools).toHaveLength(340);
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expectSoundOutput(result);
    expectNothingDroppedSilently(doc, "okta.json", result);
    expect(serializeResult(compile([input]))).toBe(serializeResult(result));
    // Swagger formData file parameters become multipart bodies with their file parts named.
    expect(result.diagnostics.some((d) => d.code === "body.file_part")).toBe(true);
  });

  test("AutoRest's test corpus: every document compiles, sound, deterministic, nothing silently dropped", () => {
    const files = readdirSync(AUTOREST)
      .filter((f) => f.endsWith(".json"))
      .sort();
    expect(files.length).toBe(74);
    let ops = 0;
    let tools = 0;
    for (const f of files) {
      const { doc, input, result } = compileFile(join(AUTOREST, f), f);
      ops += operations(doc);
      tools += result.tools.length;
      expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      expectSoundOutput(result);
      expectNothingDroppedSilently(doc, f, result);
      expect(serializeResult(compile([input]))).toBe(serializeResult(result));
    }
    expect(ops).toBe(1051);
    expect(tools).toBe(1051);
  });
});
