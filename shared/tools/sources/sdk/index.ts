import { pathToFileURL } from "node:url";
import { planHandwritten } from "../../handwritten.ts";
import type { ToolSource } from "../types.ts";
import { sdkToolsFromModule } from "./define.ts";

/** TypeScript/JavaScript modules whose exports are defineTool() results. */
export const sdkSource: ToolSource = {
  kind: "sdk",
  fileExtensions: [".ts", ".mts", ".js", ".mjs", ".tsx"],
  detect: () => false,
  async loadFile(absolutePath, label) {
    try {
      const mod = (await import(pathToFileURL(absolutePath).href)) as Record<string, unknown>;
      return { input: { kind: "sdk", label, doc: sdkToolsFromModule(mod) } };
    } catch (err) {
      return {
        failure: {
          code: "sdk.load_failed",
          path: `${label}#`,
          message: `import failed: ${err instanceof Error ? err.message : String(err)}`,
        },
      };
    }
  },
  plan(input, ctx) {
    const tools = Array.isArray(input.doc) ? input.doc : [];
    if (tools.length === 0)
      ctx.sink.add("sdk.no_tools", `${input.label}#`, "the module exports no defineTool() results");
    return planHandwritten({ list: tools, label: input.label, source: "sdk", ctx, listPtr: [] });
  },
};
