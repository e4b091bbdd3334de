import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { runToolsCommand } from "../../services/cli/tools-command.ts";
import {
  openToolSetStore,
  readCompileOutput,
  TOOLSET_BUCKET,
  TOOLSET_OBJECTS,
  ToolSetCorrupt,
  type ToolSetPointer,
  ToolSetRejected,
} from "../../shared/tools/index.ts";
import { startNats } from "../helpers/nats.ts";
import { REPO_ROOT, validTool } from "./helpers.ts";

/** The CLI tests' files (a compiled set above max_payload is 3 MB). */
const tmp = mkdtempSync(join(tmpdir(), "sy-publish-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const GITHUB = join(REPO_ROOT, "node_modules/@octokit/openapi/generated/api.github.com.json");

function io(env: Record<string, string | undefined>) {
  const out: string[] = [];
  return {
    io: { stdout: (s: string) => out.push(s), stderr: (s: string) => out.push(s), env },
    text: () => out.join(""),
  };
}

/** A valid compileResult of `count` tools of about `toolBytes` bytes each. */
function bigSet(count: number, toolBytes: number) {
  const tools = Array.from({ length: count }, (_, i) =>
    validTool({
      name: `tool_${i}`,
      inputSchema: {
        type: "object",
        properties: { id: { type: "string", enum: [`${i}`, "x".repeat(toolBytes)] } },
      },
    }),
  );
  return { tools, diagnostics: [] };
}

describe("tool-set store (KV pointer sy_toolsets + Object Store sy_toolset_objects)", () => {
  test("publish stores a validated set as a new version; getToolSet returns it; bad sets are refused", async () => {
    await using nats = await startNats();
    const store = await openToolSetStore(nats.nc);
    const tools = [validTool(), validTool({ name: "other" })];
    const first = await store.publish("billing", { tools, diagnostics: [] });
    expect(first).toMatchObject({ name: "billing", version: 1, tools: 2 });
    expect(first.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await store.getToolSet("billing")).toEqual(tools as never);
    expect(await store.getToolSet("missing")).toBeUndefined();
    expect(await store.list()).toEqual(["billing"]);

    const second = await store.publish("billing", { tools: [validTool()], diagnostics: [] });
    expect(second.version).toBe(2);
    // Another reader (a new store, no cache) sees the new version.
    expect(await (await openToolSetStore(nats.nc)).getToolSet("billing")).toHaveLength(1);

    await expect(
      store.publish("bad", { tools: [validTool({ name: "bad name" })], diagnostics: [] }),
    ).rejects.toBeInstanceOf(ToolSetRejected);
    await expect(
      store.publish("dup", { tools: [validTool(), validTool()], diagnostics: [] }),
    ).rejects.toThrow("appears twice");
    await expect(
      store.publish("err", {
        tools: [],
        diagnostics: [{ severity: "error", path: "#", code: "x", message: "m" }],
      }),
    ).rejects.toThrow("error diagnostic");
    await expect(store.publish("no spaces", { tools: [], diagnostics: [] })).rejects.toThrow(
      "must match",
    );

    // The KV key holds the pointer others read: version, object and digest.
    const kv = await new Kvm(nats.nc).open(TOOLSET_BUCKET);
    expect((await kv.get("billing"))?.json()).toMatchObject({
      name: "billing",
      version: 2,
      digest: second.digest,
      object: second.object,
    });
  });

  test("a set whose bytes do not match the published digest is refused on read", async () => {
    await using nats = await startNats();
    const store = await openToolSetStore(nats.nc);
    const p = await store.publish("crm", { tools: [validTool()], diagnostics: [] });
    const objects = await new Objm(nats.nc).open(TOOLSET_OBJECTS);
    const forged = `${JSON.stringify(validTool({ risk: "low", name: "forged" }))}\n`;
    await objects.putBlob({ name: p.object }, new TextEncoder().encode(forged));
    const reader = await openToolSetStore(nats.nc);
    await expect(reader.getToolSet("crm")).rejects.toBeInstanceOf(ToolSetCorrupt);
    await objects.delete(p.object);
    await expect(reader.getToolSet("crm")).rejects.toThrow("is missing");
  });

  test("old versions beyond the history are removed; a 0.1 value (the set in KV) still reads", async () => {
    await using nats = await startNats();
    const store = await openToolSetStore(nats.nc);
    let last: ToolSetPointer | undefined;
    for (let i = 0; i < 8; i++)
      last = await store.publish("ops", { tools: [validTool({ name: `t${i}` })], diagnostics: [] });
    expect(last?.version).toBe(8);
    const objects = await new Objm(nats.nc).open(TOOLSET_OBJECTS);
    const names = (await objects.list()).map((o) => o.name).filter((n) => n.startsWith("ops/"));
    expect(names.length).toBeLessThanOrEqual(5);
    expect(names).toContain(last?.object as string);

    const kv = await new Kvm(nats.nc).open(TOOLSET_BUCKET);
    await kv.put("legacy", JSON.stringify({ name: "legacy", tools: [validTool()] }));
    expect((await store.getToolSet("legacy"))?.[0]?.name).toBe("get_pet");
  });

  test(
    "a set 20x larger than max_payload publishes and reads back whole",
    async () => {
      await using nats = await startNats();
      const maxPayload = nats.nc.info?.max_payload as number;
      expect(maxPayload).toBeGreaterThan(0);
      const set = bigSet(360, 60_000);
      const size = set.tools.reduce((n, t) => n + JSON.stringify(t).length + 1, 0);
      expect(size).toBeGreaterThan(20 * maxPayload);
      const store = await openToolSetStore(nats.nc);
      const p = await store.publish("huge", set);
      expect(p.bytes).toBe(size);
      const back = await (await openToolSetStore(nats.nc)).getToolSet("huge");
      expect(back).toHaveLength(360);
      expect(back?.[359]).toEqual(set.tools[359] as never);
    },
    { timeout: 120_000 },
  );

  test(
    "GitHub's REST description compiles (NDJSON) and publishes through the CLI, above max_payload",
    async () => {
      await using nats = await startNats();
      const file = join(tmp, "github.ndjson");
      const c = io({});
      expect(await runToolsCommand(["compile", GITHUB, "--ndjson", "-o", file], c.io)).toBe(0);
      expect(statSync(file).size).toBeGreaterThan(nats.nc.info?.max_payload as number);
      const p = io({ NATS_URL: nats.url });
      expect(await runToolsCommand(["publish", "github", file], p.io)).toBe(0);
      expect(p.text()).toMatch(
        /published tool set github version 1: \d+ tools, \d+ bytes, sha256:/,
      );
      const read = await readCompileOutput(file);
      if (!read.ok) throw new Error(read.error);
      const published = (read.value as { tools: unknown[] }).tools;
      const back = await (await openToolSetStore(nats.nc)).getToolSet("github");
      expect(back?.length).toBe(published.length);
      expect(back).toEqual(published as never);
    },
    { timeout: 120_000 },
  );

  test("switchyard tools publish refuses an invalid set and needs NATS_URL", async () => {
    await using nats = await startNats();
    const file = join(tmp, "set.json");
    writeFileSync(
      file,
      JSON.stringify({ tools: [validTool({ risk: "extreme" })], diagnostics: [] }),
    );
    const t = io({ NATS_URL: nats.url });
    expect(await runToolsCommand(["publish", "crm", file], t.io)).toBe(1);
    expect(t.text()).toContain("refused: not a valid compileResult");
    const none = io({});
    expect(await runToolsCommand(["publish", "crm", file], none.io)).toBe(1);
    expect(none.text()).toContain("NATS_URL");
  });
});
