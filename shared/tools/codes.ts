import type { Severity } from "./schemas.ts";
import { SOURCE_CODES } from "./sources/codes.ts";

/**
 * Every diagnostic code the compiler and validator can emit, with its severity and meaning.
 * docs/tools.md lists the same table; a test keeps the two in step, so codes stay stable.
 */
export const DIAGNOSTIC_CODES = {
  "record.type": ["error", "A field has the wrong JSON type."],
  "record.required": ["error", "A required field is missing."],
  "record.additional_property": ["error", "A field that the record does not define is present."],
  "record.min_length": ["error", "A string is shorter than its minimum length."],
  "record.max_length": ["error", "A string is longer than its maximum length."],
  "record.pattern": ["error", "A string does not match its pattern (name, path)."],
  "record.enum": ["error", "A value is not one of the allowed values."],
  "record.const": [
    "error",
    "A value differs from its required constant (schemaVersion, inputSchema.type).",
  ],
  "record.minimum": ["error", "A number is below its minimum."],
  "record.maximum": ["error", "A number is above its maximum."],
  "record.max_items": ["error", "An array has more items than allowed."],
  "record.unique_items": ["error", "An array that must hold unique items has duplicates."],
  "record.property_name": [
    "error",
    "An extension name does not start with x-ai-, x-service- or x-business-.",
  ],
  "record.invalid": ["error", "The record breaks another schema rule."],
  "input.read_failed": ["error", "An input file could not be read."],
  "input.parse_failed": ["error", "An input is neither valid JSON nor valid YAML."],
  "input.unknown_format": [
    "error",
    "An input is not OpenAPI, Swagger, Overlay, MCP, manual or SDK.",
  ],
  "name.sanitized": ["info", "Characters outside [A-Za-z0-9_] were replaced in the tool name."],
  "name.generated": ["info", "No operationId: the name was built from the method and path."],
  "name.truncated": [
    "warning",
    "The name was longer than 64 characters and was shortened with a hash suffix.",
  ],
  "name.collision": ["warning", "Several tools had the same name; each got a stable hash suffix."],
  "description.fallback": ["info", 'No description or summary: "METHOD path" was used.'],
  "description.truncated": [
    "warning",
    "The description exceeded 500 characters and was cut at a word boundary.",
  ],
  "scope.truncated": ["warning", "The scope exceeded 191 characters and was cut."],
  "context.truncated": [
    "warning",
    "A tag exceeded 100 characters and was cut, or more than 50 tags were given.",
  ],
  "extension.dropped": [
    "info",
    "An x- extension outside x-ai-, x-service-, x-business- was not copied.",
  ],
  "schema.invalid": [
    "warning",
    "An emitted schema broke the JSON Schema 2020-12 meta-schema; the keyword was removed or the subschema became {}.",
  ],
  "budget.tool_reduced": [
    "warning",
    "A tool was over the per-tool size budget; its schema was reduced in the documented order.",
  ],
  "budget.tool_omitted": [
    "error",
    "A tool stayed over the per-tool size budget after every reduction; it was left out.",
  ],
  "budget.compile_exceeded": [
    "error",
    "The output budget of the compile was used up; this tool was left out.",
  ],
  "inline.kept_defs": [
    "warning",
    "Inlining the tool's $defs would pass the inline budget; the tool keeps $defs.",
  ],
  "inline.recursion_cut": [
    "warning",
    "A recursive reference cannot be inlined; at the repeat it accepts any value of its type.",
  ],
  "tool.invalid": [
    "error",
    "A compiled tool failed the record schema and was dropped (compiler bug).",
  ],
  "compile.internal_error": [
    "error",
    "An unexpected failure while compiling one input; the input was skipped.",
  ],

  ...SOURCE_CODES,
} as const satisfies Record<string, readonly [Severity, string]>;

export type DiagnosticCode = keyof typeof DIAGNOSTIC_CODES;
