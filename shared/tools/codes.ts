import type { Severity } from "./schemas.ts";

/**
 * Every diagnostic code the compiler and validator can emit, with its severity and meaning.
 * docs/tools.md lists the same table; a test keeps the two in step, so codes stay stable.
 */
export const DIAGNOSTIC_CODES = {
  // Record validation (validateToolDefinition)
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
  // Inputs
  "input.read_failed": ["error", "An input file could not be read."],
  "input.parse_failed": ["error", "An input is neither valid JSON nor valid YAML."],
  "input.unknown_format": [
    "error",
    "An input is not OpenAPI, Swagger, Overlay, MCP, manual or SDK.",
  ],
  "input.unsupported_version": [
    "error",
    "An OpenAPI or Swagger version this compiler does not read.",
  ],
  "input.no_operations": ["warning", "A document holds no operations."],
  // Operations
  "operation.invalid": ["error", "An operation or path item is not an object; it is skipped."],
  "operation.method_unsupported": [
    "info",
    "TRACE operations (and other methods outside the record's enum) are not compiled.",
  ],
  "operation.excluded": ["info", "x-service-exclude removed an operation from the tool set."],
  "operation.overlay_changed": [
    "info",
    "An overlay changed this operation, so its source is overlay.",
  ],
  // Names
  "name.sanitized": ["info", "Characters outside [A-Za-z0-9_] were replaced in the tool name."],
  "name.generated": ["info", "No operationId: the name was built from the method and path."],
  "name.truncated": [
    "warning",
    "The name was longer than 64 characters and was shortened with a hash suffix.",
  ],
  "name.collision": ["warning", "Several tools had the same name; each got a stable hash suffix."],
  // Descriptions and metadata
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
  "override.invalid": [
    "warning",
    "An x-service-* override had the wrong type or value and was ignored.",
  ],
  "risk.get_looks_mutating": [
    "warning",
    "A safe method whose path or operationId reads like a mutation is not marked read-only.",
  ],
  // Parameters and bodies
  "param.invalid": ["error", "A parameter lacks a name or location; it is skipped."],
  "param.credential_excluded": [
    "info",
    "A parameter that carries credentials was kept out of inputSchema.",
  ],
  "param.header_ignored": [
    "info",
    "Accept, Content-Type and similar headers are set by the transport, not the model.",
  ],
  "param.renamed": [
    "warning",
    "Two inputs had the same name; the clashing ones were renamed with their location.",
  ],
  "param.name_sanitized": [
    "info",
    "A parameter name had characters model APIs refuse; it was renamed.",
  ],
  "body.wrapped": [
    "info",
    "A request body that is not a plain object is passed under the `body` property.",
  ],
  "body.form_urlencoded": ["info", "The form-urlencoded body was spread like a JSON body."],
  "body.multipart": [
    "warning",
    "The multipart body was mapped to properties; the executor must encode it.",
  ],
  "body.file_part": ["warning", "A body part is a file (binary); models cannot send it directly."],
  "body.unsupported_media": [
    "warning",
    "No JSON, form or multipart media type: the first media type was used as `body`.",
  ],
  "body.media_type_chosen": ["info", "The body offers several media types; one was chosen."],
  // References and schemas
  "ref.remote_refused": [
    "warning",
    "A $ref to a remote URL was not fetched; the schema accepts any value.",
  ],
  "ref.unresolved": ["error", "A $ref points to nothing; the schema accepts any value."],
  "ref.file_unreadable": ["error", "A $ref names a file that could not be read or parsed."],
  "ref.recursive": ["info", "A recursive schema was placed in $defs."],
  "schema.too_deep": [
    "warning",
    "A schema nested deeper than the compiler follows was replaced by {}.",
  ],
  "schema.allof_kept": ["info", "allOf members conflict, so allOf was kept instead of merged."],
  // Overlays
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
  // MCP, manual and SDK sources
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
  "manual.tool_invalid": ["error", "A manual tool definition is not valid; it is skipped."],
  "sdk.load_failed": ["error", "An SDK module could not be imported."],
  "sdk.no_tools": ["warning", "An SDK module exports no defineTool() results."],
  "sdk.tool_invalid": ["error", "An SDK tool definition is not valid; it is skipped."],
  // Catch-all
  "tool.invalid": [
    "error",
    "A compiled tool failed the record schema and was dropped (compiler bug).",
  ],
  "compile.internal_error": [
    "error",
    "An unexpected failure while compiling one input; the input was skipped.",
  ],
} as const satisfies Record<string, readonly [Severity, string]>;

export type DiagnosticCode = keyof typeof DIAGNOSTIC_CODES;
