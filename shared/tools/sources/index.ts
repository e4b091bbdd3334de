import { manualSource } from "./manual/index.ts";
import { mcpSource } from "./mcp/index.ts";
import { openApiSource } from "./openapi/index.ts";
import { overlaySource } from "./overlay/index.ts";
import { sdkSource } from "./sdk/index.ts";
import type { InputKind, ToolSource } from "./types.ts";

/**
 * Every kind of compiler input, in the order a parsed document is matched against them
 * (manual before MCP: both hold a `tools` array, manual records carry method/path). The shipped
 * sources are folders beside this file, one line each here (and their codes in codes.ts); a
 * source registered later (registerToolSource) is asked after them.
 */
const registered: ToolSource[] = [openApiSource, overlaySource, manualSource, mcpSource, sdkSource];

export const SOURCES_IN_ORDER: readonly ToolSource[] = registered;

/**
 * Adds a source of compiler input. Its tools carry one of the tool-definition `source` values
 * (a new value is a change of that contract). The same module registered again is a no-op; returns what takes it out again.
 */
export function registerToolSource(source: ToolSource): () => void {
  const unregister = () => {
    const at = registered.indexOf(source);
    if (at >= 0) registered.splice(at, 1);
  };
  const same = registered.find((s) => s.kind === source.kind);
  if (same === source) return unregister;
  if (same) throw new Error(`a tool source of kind ${source.kind} is registered already`);
  registered.push(source);
  return unregister;
}

export function sourceFor(kind: InputKind): ToolSource {
  const s = SOURCES_IN_ORDER.find((x) => x.kind === kind);
  if (!s) throw new Error(`no source for input kind ${kind}`);
  return s;
}
