import { manualSource } from "./manual/index.ts";
import { mcpSource } from "./mcp/index.ts";
import { openApiSource } from "./openapi/index.ts";
import { overlaySource } from "./overlay/index.ts";
import { sdkSource } from "./sdk/index.ts";
import type { InputKind, ToolSource } from "./types.ts";

/**
 * Every kind of compiler input, in the order a parsed document is matched against them
 * (manual before MCP: both hold a `tools` array, manual records carry method/path).
 * A new source is a folder beside these and one line here (and its codes in codes.ts).
 */
export const SOURCES_IN_ORDER: readonly ToolSource[] = [
  openApiSource,
  overlaySource,
  manualSource,
  mcpSource,
  sdkSource,
];

export function sourceFor(kind: InputKind): ToolSource {
  const s = SOURCES_IN_ORDER.find((x) => x.kind === kind);
  if (!s) throw new Error(`no source for input kind ${kind}`);
  return s;
}
