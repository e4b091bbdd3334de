import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import type { DiagnosticCode } from "./codes.ts";
import { DiagnosticSink } from "./diagnostics.ts";
import {
  type CompileResult,
  CompileResultSchema,
  type Diagnostic,
  type ToolDefinition,
  ToolDefinitionSchema,
} from "./schemas.ts";

const ajv = new Ajv2020({ allErrors: true, strict: false });
let toolValidator: ValidateFunction | undefined;
let resultValidator: ValidateFunction | undefined;

function toolCheck(): ValidateFunction {
  toolValidator ??= ajv.compile(JSON.parse(JSON.stringify(ToolDefinitionSchema)));
  return toolValidator;
}

function resultCheck(): ValidateFunction {
  resultValidator ??= ajv.compile(JSON.parse(JSON.stringify(CompileResultSchema)));
  return resultValidator;
}

const KEYWORD_CODES: Record<string, DiagnosticCode> = {
  type: "record.type",
  required: "record.required",
  additionalProperties: "record.additional_property",
  minLength: "record.min_length",
  maxLength: "record.max_length",
  pattern: "record.pattern",
  enum: "record.enum",
  const: "record.const",
  minimum: "record.minimum",
  maximum: "record.maximum",
  maxItems: "record.max_items",
  uniqueItems: "record.unique_items",
  propertyNames: "record.property_name",
};

const SUGGESTIONS: Partial<Record<DiagnosticCode, string>> = {
  "record.pattern":
    "Names use letters, digits and _ and start with a letter or _; paths start with /.",
  "record.property_name": "Rename the extension to x-ai-…, x-service-… or x-business-….",
  "record.additional_property": "Remove the field, or move custom data into extensions.",
  "record.max_length": "Shorten the value to the limit in spec section 2.3.",
};

function errorToDiagnostic(e: ErrorObject, base: string, sink: DiagnosticSink): void {
  // propertyNames errors come in pairs (the name, then the wrapper); keep the precise one.
  if (e.keyword === "propertyNames" && !e.propertyName) return;
  let instancePath = e.instancePath;
  let message = e.message ?? "is invalid";
  if (e.keyword === "required") {
    const missing = String((e.params as { missingProperty?: string }).missingProperty);
    instancePath = `${instancePath}/${missing}`;
    message = `${missing} is required`;
  } else if (e.keyword === "additionalProperties") {
    const extra = String((e.params as { additionalProperty?: string }).additionalProperty);
    instancePath = `${instancePath}/${extra}`;
    message = `${extra} is not a field of this record`;
  } else if (e.propertyName !== undefined) {
    instancePath = `${instancePath}/${e.propertyName}`;
    message = `extension name ${JSON.stringify(e.propertyName)} must match ^x-(ai|service|business)-`;
  } else if (e.keyword === "enum") {
    const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues ?? [];
    message = `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`;
  }
  const code =
    e.propertyName !== undefined
      ? "record.property_name"
      : (KEYWORD_CODES[e.keyword] ?? "record.invalid");
  sink.add(
    code,
    `${base}#${instancePath}`,
    `${instancePath || "record"}: ${message}`,
    SUGGESTIONS[code],
  );
}

function dedupe(list: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return list.filter((d) => {
    const key = `${d.path}\u0000${d.code}\u0000${d.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Checks a tool-definition record against service.tool-definition.v1. Returns diagnostics
 * (empty when valid); never throws, whatever the input. Paths are `#/field` pointers, prefixed
 * with `base` when given.
 */
export function validateToolDefinition(record: unknown, base = ""): Diagnostic[] {
  const sink = new DiagnosticSink();
  try {
    const check = toolCheck();
    if (!check(record)) for (const e of check.errors ?? []) errorToDiagnostic(e, base, sink);
  } catch (err) {
    sink.add("record.invalid", `${base}#`, `record could not be checked: ${String(err)}`);
  }
  return dedupe(sink.items);
}

/** Type guard form of validateToolDefinition. */
export function isToolDefinition(record: unknown): record is ToolDefinition {
  return validateToolDefinition(record).length === 0;
}

/** Checks a whole compileResult against compile-result.json; never throws. */
export function validateCompileResult(value: unknown): Diagnostic[] {
  const sink = new DiagnosticSink();
  try {
    const check = resultCheck();
    if (!check(value)) for (const e of check.errors ?? []) errorToDiagnostic(e, "", sink);
  } catch (err) {
    sink.add("record.invalid", "#", `compile result could not be checked: ${String(err)}`);
  }
  return dedupe(sink.items);
}

/** Type guard for a compileResult. */
export function isCompileResult(value: unknown): value is CompileResult {
  return validateCompileResult(value).length === 0;
}
