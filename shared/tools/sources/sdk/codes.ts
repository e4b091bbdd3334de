import type { CodeTable } from "../types.ts";

/** Diagnostic codes of the sdk source: code → [severity, meaning]. */
export const SDK_CODES = {
  "sdk.load_failed": ["error", "An SDK module could not be imported."],
  "sdk.no_tools": ["warning", "An SDK module exports no defineTool() results."],
  "sdk.tool_invalid": ["error", "An SDK tool definition is not valid; it is skipped."],
} as const satisfies CodeTable;
