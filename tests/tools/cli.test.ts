import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runToolsCommand } from "../../services/cli/tools-command.ts";
import { compileFromFiles, validateCompileResult } from "../../shared/tools/index.ts";
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
    expect(t.err()).toContain("2 tools, 0 errors");
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

  test("stats reports count, risk mix and estimated tokens", async () => {
    const file = join(tmp, "shop.json");
    const t = io();
    expect(await runToolsCommand(["stats", file], t.io)).toBe(0);
    const stats = JSON.parse(t.out());
    expect(stats).toMatchObject({ tools: 2, risk: { low: 0, medium: 2, high: 0 } });
    expect(stats.estimatedTokens).toBeGreaterThan(10);
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
