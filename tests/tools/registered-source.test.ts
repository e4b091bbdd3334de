import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compile, loadInputs, registerToolSource } from "../../shared/tools/index.ts";
import { linesSource } from "../fixtures/tool-sources/lines/index.ts";

let unregister = () => {};

describe("a tool source registered from one folder (tests/fixtures/tool-sources/lines)", () => {
  test("its files compile into tool definitions once it is registered", async () => {
    const dir = mkdtempSync(join(tmpdir(), "switchyard-lines-"));
    try {
      const file = join(dir, "shop.lines");
      writeFileSync(file, "GET /orders List the orders\nPOST /orders Place an order\n");
      // Unregistered, a .lines file is read as JSON/YAML text: no tools come out of it.
      const before = await loadInputs([{ file }], [], dir);
      expect(compile(before.inputs, before.diagnostics).tools).toEqual([]);

      unregister = registerToolSource(linesSource);
      const { inputs, diagnostics } = await loadInputs([{ file }], [], dir);
      expect(inputs.map((i) => i.kind)).toEqual(["lines"]);
      const result = compile(inputs, diagnostics);
      expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      expect(result.tools.map((t) => [t.method, t.path, t.description, t.source])).toEqual([
        ["GET", "/orders", "List the orders", "manual"],
        ["POST", "/orders", "Place an order", "manual"],
      ]);
    } finally {
      // The registry is the process's: tests after this file see only the shipped sources.
      unregister();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
