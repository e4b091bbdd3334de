import { beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  type CompileResult,
  compile,
  parseDocumentText,
  serializeResult,
} from "../../shared/tools/index.ts";
import { expectNothingDroppedSilently, expectSoundOutput, REPO_ROOT } from "./helpers.ts";

function checkResult(r: CompileResult) {
  expectSoundOutput(r);
}

function listFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) =>
      statSync(join(dir, f)).isDirectory() ? listFiles(join(dir, f)) : [join(dir, f)],
    );
}

describe("@readme/oas-examples", () => {
  const root = join(REPO_ROOT, "node_modules/@readme/oas-examples");
  for (const version of ["2.0", "3.0", "3.1"]) {
    for (const format of ["json", "yaml"]) {
      const dir = join(root, version, format);
      test(`${version} ${format}: every document compiles, valid, unique, deterministic, nothing silently dropped`, () => {
        const files = listFiles(dir);
        expect(files.length).toBeGreaterThan(5);
        for (const file of files) {
          const parsed = parseDocumentText(readFileSync(file, "utf8"));
          expect(parsed.ok).toBe(true);
          if (!parsed.ok) continue;
          const label = file.slice(root.length + 1);
          const input = { kind: "openapi" as const, label, doc: parsed.doc, docId: file };
          const r = compile([input]);
          checkResult(r);
          expectNothingDroppedSilently(parsed.doc, label, r);
          expect(serializeResult(compile([input]))).toBe(serializeResult(r));
        }
      });
    }
  }
});

describe("@octokit/openapi (GitHub REST, ~1,200 operations)", () => {
  const file = join(REPO_ROOT, "node_modules/@octokit/openapi/generated/api.github.com.json");
  let doc: unknown;
  let result: CompileResult;
  beforeAll(() => {
    doc = JSON.parse(readFileSync(file, "utf8"));
    result = compile([{ kind: "openapi", label: "github.json", doc: doc as never }]);
  });

  test("compiles to a valid result with unique names and more than 1,000 tools", () => {
    checkResult(result);
    expect(result.tools.length).toBeGreaterThan(1000);
    expect(result.tools.every((t) => t.name.length <= 64)).toBe(true);
    expect(result.diagnostics.some((d) => d.severity === "error")).toBe(false);
  });

  test("no operation is missing without a diagnostic", () => {
    expectNothingDroppedSilently(doc, "github.json", result);
  });

  test("is deterministic: a second compile is byte-identical", () => {
    const again = compile([{ kind: "openapi", label: "github.json", doc: doc as never }]);
    expect(serializeResult(again)).toBe(serializeResult(result));
  });

  test("auth never leaks into tool inputs", () => {
    for (const t of result.tools) {
      for (const k of Object.keys(t.paramIn)) expect(k.toLowerCase()).not.toBe("authorization");
    }
  });
});
