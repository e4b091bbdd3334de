import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DIAGNOSTIC_CODES } from "../../shared/tools/index.ts";
import { REPO_ROOT } from "./helpers.ts";

describe("docs/tools.md", () => {
  const doc = readFileSync(join(REPO_ROOT, "docs/tools.md"), "utf8");
  const rows = [...doc.matchAll(/^\| `([a-z_]+\.[a-z_]+)` \| (error|warning|info) \|/gm)].map(
    (m) => [m[1], m[2]],
  );

  test("lists every diagnostic code with its severity, and no other codes", () => {
    const expected = Object.entries(DIAGNOSTIC_CODES).map(([code, [severity]]) => [code, severity]);
    expect(rows.sort()).toEqual(expected.sort());
  });

  test("documents the method and path given to MCP tools", () => {
    expect(doc).toContain("/mcp/tools/<url-encoded tool name>");
    expect(doc).toContain("method `POST`");
  });
});
