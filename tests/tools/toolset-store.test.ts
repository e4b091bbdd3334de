import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kvm } from "@nats-io/kv";
import { runToolsCommand } from "../../services/cli/tools-command.ts";
import {
  createToolSetStore,
  openToolSetStore,
  TOOLSET_BUCKET,
  ToolSetRejected,
} from "../../shared/tools/index.ts";
import { startNats } from "../helpers/nats.ts";
import { validTool } from "./helpers.ts";

describe("tool-set store (NATS KV sy_toolsets)", () => {
  test("publish stores a validated set; getToolSet returns it; bad sets are refused", async () => {
    await using nats = await startNats();
    const store = await openToolSetStore(nats.nc);
    const tools = [validTool(), validTool({ name: "other" })];
    const rev = await store.publish("billing", { tools, diagnostics: [] });
    expect(rev).toBeGreaterThan(0);
    expect(await store.getToolSet("billing")).toEqual(tools as never);
    expect(await store.getToolSet("missing")).toBeUndefined();
    expect(await store.list()).toEqual(["billing"]);

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

    // The bucket name is the contract others read from.
    const kv = await new Kvm(nats.nc).open(TOOLSET_BUCKET);
    expect((await kv.get("billing"))?.json()).toEqual({ name: "billing", tools });
    expect(await createToolSetStore({ kv }).getToolSet("billing")).toHaveLength(2);
  });

  test("switchyard tools publish uses NATS_URL from io.env", async () => {
    await using nats = await startNats();
    const dir = mkdtempSync(join(tmpdir(), "sy-publish-"));
    const file = join(dir, "set.json");
    writeFileSync(file, JSON.stringify({ tools: [validTool()], diagnostics: [] }));
    const out: string[] = [];
    const io = {
      stdout: (s: string) => out.push(s),
      stderr: (s: string) => out.push(s),
      env: { NATS_URL: nats.url },
    };
    expect(await runToolsCommand(["publish", "crm", file], io)).toBe(0);
    expect(out.join("")).toContain("published tool set crm");
    const store = await openToolSetStore(nats.nc);
    expect((await store.getToolSet("crm"))?.[0]?.name).toBe("get_pet");
    writeFileSync(
      file,
      JSON.stringify({ tools: [validTool({ risk: "extreme" })], diagnostics: [] }),
    );
    expect(await runToolsCommand(["publish", "crm", file], io)).toBe(1);
  });
});
