import type { CodeTable } from "../types.ts";

/** Diagnostic codes of the overlay source: code → [severity, meaning]. */
export const OVERLAY_CODES = {
  "overlay.invalid": [
    "error",
    "An overlay document does not match the Overlay 1.0/1.1 schema; it is not applied.",
  ],
  "overlay.target_invalid": [
    "error",
    "An action target is not a valid RFC 9535 JSONPath expression.",
  ],
  "overlay.target_no_match": ["warning", "An action target selected no nodes."],
  "overlay.target_primitive": [
    "error",
    "An update targets a primitive value; only objects and arrays can be updated.",
  ],
  "overlay.update_incompatible": [
    "error",
    "An update value cannot be merged into the selected node.",
  ],
  "overlay.copy_invalid": ["error", "A copy source does not select exactly one node."],
} as const satisfies CodeTable;
