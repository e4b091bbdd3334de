import type { CodeTable } from "../types.ts";

/** Diagnostic codes of the manual source: code → [severity, meaning]. */
export const MANUAL_CODES = {
  "manual.tool_invalid": ["error", "A manual tool definition is not valid; it is skipped."],
} as const satisfies CodeTable;
