import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runToolsCommand } from "../../services/cli/tools-command.ts";
import {
  compileFromFiles,
  serializeResult,
  validateCompileResult,
} from "../../shared/tools/index.ts";
import { FIXTURES, validTool } from "./helpers.ts";

function io(env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s), env },
    out: () => out.join(""),
    err: () => err.join(""),
  };
}

const tmp = mkdtempSync(join(tmpdir(), "sy-tools-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("switchyard tools (runToolsCommand)", () => {
  test("compile writes a compileResult and exits 0 without errors", async () => {
    const t = io();
    const out = join(tmp, "shop.json");
    const code = await runToolsCommand(
      ["compile", join(FIXTURES, "legacy.swagger.yaml"), "-o", out],
      t.io,
    );
    expect(code).toBe(0);
    const result = JSON.parse(readFileSync(out, "utf8"));
    expect(validateCompileResult(result)).toEqual([]);
    expect(result.tools.map((x: { name: string }) => x.name)).toEqual(["putThing", "uploadFile"]);
    expect(t.err()).toMatch(/^2 tools \(\d+ bytes, largest \w+ \d+ bytes\), 0 errors/m);
  });

  test("compile exits 1 when any error diagnostic is present and prints to stdout without -o", async () => {
    const t = io();
    const code = await runToolsCommand(["compile", join(FIXTURES, "mcp-tools.json")], t.io);
    expect(code).toBe(1);
    expect(JSON.parse(t.out()).tools).toHaveLength(3);
    expect(t.err()).toContain("error: mcp.tool_invalid");
  });

  test("--overlay applies overlays before compiling", async () => {
    const overlay = join(tmp, "exclude.yaml");
    writeFileSync(
      overlay,
      "overlay: 1.0.0\ninfo: { title: x, version: '1' }\nactions:\n  - target: $.paths['/files'].post\n    update: { x-service-exclude: true }\n",
    );
    const t = io();
    expect(
      await runToolsCommand(
        ["compile", join(FIXTURES, "legacy.swagger.yaml"), "--overlay", overlay],
        t.io,
      ),
    ).toBe(0);
    expect(JSON.parse(t.out()).tools.map((x: { name: string }) => x.name)).toEqual(["putThing"]);
  });

  test("validate accepts a valid file and refuses an invalid one with diagnostics", async () => {
    const good = join(tmp, "tool.json");
    writeFileSync(good, JSON.stringify(validTool()));
    const bad = join(tmp, "bad.json");
    writeFileSync(bad, JSON.stringify([validTool(), validTool({ timeoutMs: 60001 })]));
    const a = io();
    expect(await runToolsCommand(["validate", good], a.io)).toBe(0);
    const b = io();
    expect(await runToolsCommand(["validate", bad], b.io)).toBe(1);
    expect(b.err()).toContain(`record.maximum at ${bad}#/1/timeoutMs`);
  });

  test("stats reports count, risk mix, estimated tokens and the largest tools", async () => {
    const file = join(tmp, "shop.json");
    const t = io();
    expect(await runToolsCommand(["stats", file], t.io)).toBe(0);
    const stats = JSON.parse(t.out());
    expect(stats).toMatchObject({ tools: 2, risk: { low: 0, medium: 2, high: 0 }, reduced: 0 });
    expect(stats.estimatedTokens).toBeGreaterThan(10);
    expect(stats.largest.map((l: { name: string }) => l.name).sort()).toEqual([
      "putThing",
      "uploadFile",
    ]);
    expect(stats.largest[0].bytes).toBeGreaterThanOrEqual(stats.largest[1].bytes);
    expect(stats.bytes).toBe(stats.largest[0].bytes + stats.largest[1].bytes);
  });

  test("the streamed JSON is byte-identical to serializeResult; NDJSON holds the same tools, then diagnostics", async () => {
    const inputs = ["shop.yaml", "mcp-tools.json", "manual-tools.yaml"].map((f) =>
      join(FIXTURES, f),
    );
    const json = io();
    await runToolsCommand(["compile", ...inputs], json.io);
    const expected = serializeResult(await compileFromFiles(inputs.map((file) => ({ file }))));
    expect(json.out()).toBe(expected);
    const nd = io();
    await runToolsCommand(["compile", ...inputs, "--ndjson"], nd.io);
    const lines = nd
      .out()
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    const parsed = JSON.parse(expected);
    expect(lines.filter((l) => "schemaVersion" in l)).toEqual(parsed.tools);
    expect(lines.filter((l) => "severity" in l)).toEqual(parsed.diagnostics);
    // Tools first, then diagnostics.
    const firstDiag = lines.findIndex((l) => "severity" in l);
    expect(lines.slice(firstDiag).every((l) => "severity" in l)).toBe(true);
    // Both forms are read back by validate and stats.
    const file = join(tmp, "out.ndjson");
    writeFileSync(file, nd.out());
    const v = io();
    expect(await runToolsCommand(["validate", file], v.io)).toBe(0);
    expect(v.out()).toContain(`${parsed.tools.length} tool definition(s) valid`);
  });

  test("budget flags and --inline-refs reach the compiler; bad values are usage errors", async () => {
    const shop = join(FIXTURES, "shop.yaml");
    const inline = io();
    await runToolsCommand(["compile", shop, "--inline-refs"], inline.io);
    const tools = JSON.parse(inline.out()).tools as { name: string; inputSchema: object }[];
    const tree = tools.find((x) => x.name === "saveTree");
    expect(tree?.inputSchema).not.toHaveProperty("$defs");
    expect(inline.err()).toContain("inline.recursion_cut");
    const tight = io();
    expect(await runToolsCommand(["compile", shop, "--max-tool-bytes", "300"], tight.io)).toBe(1);
    expect(tight.err()).toContain("budget.tool_omitted");
    const capped = io();
    expect(await runToolsCommand(["compile", shop, "--max-output-bytes", "1000"], capped.io)).toBe(
      1,
    );
    expect(capped.err()).toContain("budget.compile_exceeded");
    expect(await runToolsCommand(["compile", shop, "--max-tool-bytes", "-1"], io().io)).toBe(2);
    expect(await runToolsCommand(["compile", shop, "--inline-refs=x"], io().io)).toBe(2);
  });

  test("--emit-document prints the description as the overlays left it", async () => {
    const overlay = join(tmp, "rename.yaml");
    writeFileSync(
      overlay,
      "overlay: 1.1.0\ninfo: { title: x, version: '1' }\nactions:\n  - target: $.paths['/files'].post\n    update: { operationId: sendFile, x-service-risk: high }\n",
    );
    const out = join(tmp, "overlaid.json");
    const t = io();
    expect(
      await runToolsCommand(
        [
          "compile",
          join(FIXTURES, "legacy.swagger.yaml"),
          "--overlay",
          overlay,
          "--emit-document",
          "-o",
          out,
        ],
        t.io,
      ),
    ).toBe(0);
    const doc = JSON.parse(readFileSync(out, "utf8"));
    expect(doc.swagger).toBe("2.0");
    expect(doc.paths["/files"].post).toMatchObject({
      operationId: "sendFile",
      "x-service-risk": "high",
    });
    const two = io();
    expect(
      await runToolsCommand(
        [
          "compile",
          join(FIXTURES, "legacy.swagger.yaml"),
          join(FIXTURES, "shop.yaml"),
          "--emit-document",
        ],
        two.io,
      ),
    ).toBe(2);
  });

  test("usage errors exit 2; publish without NATS_URL exits 1", async () => {
    expect(await runToolsCommand([], io().io)).toBe(2);
    expect(await runToolsCommand(["frobnicate"], io().io)).toBe(2);
    expect(await runToolsCommand(["compile"], io().io)).toBe(2);
    expect(await runToolsCommand(["compile", "x.yaml", "--bogus"], io().io)).toBe(2);
    const t = io({});
    expect(await runToolsCommand(["publish", "set", join(tmp, "shop.json")], t.io)).toBe(1);
    expect(t.err()).toContain("NATS_URL");
  });
});

describe("MCP over stdio", () => {
  test("lists every tool from a live server, following cursor pages", async () => {
    const result = await compileFromFiles([
      {
        mcp: {
          transport: "stdio",
          command: process.execPath,
          args: [join(FIXTURES, "mcp-server.ts")],
        },
        label: "paging-server",
      },
    ]);
    expect(validateCompileResult(result)).toEqual([]);
    expect(result.tools.map((t) => [t.name, t.readonly, t.risk])).toEqual([
      ["tool_0", true, "low"],
      ["tool_1", false, "high"],
      ["tool_2", true, "low"],
      ["tool_3", false, "high"],
      ["tool_4", true, "low"],
    ]);
  });

  test("a server that cannot start becomes mcp.fetch_failed", async () => {
    const result = await compileFromFiles([
      { mcp: { transport: "stdio", command: join(tmp, "no-such-binary") }, label: "dead" },
    ]);
    expect(result.diagnostics.map((d) => d.code)).toEqual(["mcp.fetch_failed"]);
  });
});
