import type { CodeTable } from "../types.ts";

/** Diagnostic codes of the mcp source: code → [severity, meaning]. */
export const MCP_CODES = {
  "mcp.unannotated": [
    "info",
    "An MCP tool has no readOnlyHint/destructiveHint; the MCP defaults (not read-only, destructive) apply.",
  ],
  "mcp.tool_invalid": [
    "error",
    "An MCP tool lacks a name or has an unusable inputSchema; it is skipped.",
  ],
  "mcp.schema_fixed": [
    "warning",
    'An MCP inputSchema lacked type "object" or properties; they were added.',
  ],
  "mcp.fetch_failed": ["error", "Listing tools from a live MCP server failed."],
} as const satisfies CodeTable;
