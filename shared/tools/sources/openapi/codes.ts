import type { CodeTable } from "../types.ts";

/** Diagnostic codes of the openapi source: code → [severity, meaning]. */
export const OPENAPI_CODES = {
  "input.unsupported_version": [
    "error",
    "An OpenAPI or Swagger version this compiler does not read.",
  ],
  "input.no_operations": ["warning", "A document holds no operations."],
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
  "override.invalid": [
    "warning",
    "An x-service-* override had the wrong type or value and was ignored.",
  ],
  "risk.get_looks_mutating": [
    "warning",
    "A safe method whose path or operationId reads like a mutation is not marked read-only.",
  ],
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
  "ref.remote_refused": [
    "warning",
    "A $ref to a remote URL was not fetched; the schema accepts any value.",
  ],
  "ref.unresolved": ["error", "A $ref points to nothing; the schema accepts any value."],
  "ref.file_unreadable": ["error", "A $ref names a file that could not be read or parsed."],
  "schema.too_deep": [
    "warning",
    "A schema nested deeper than the compiler follows was replaced by {}.",
  ],
  "schema.allof_kept": ["info", "allOf members conflict, so allOf was kept instead of merged."],
} as const satisfies CodeTable;
