import { type Static, type TSchema, Type } from "@sinclair/typebox";

/**
 * TypeBox is the single source of truth for the tool-definition contract (spec 2.3–2.6).
 * The JSON files under schemas/ are generated from these values by scripts/export-tool-schemas.ts
 * and a test fails when they drift.
 */

export const TOOL_SCHEMA_VERSION = "service.tool-definition.v1" as const;

export const TOOL_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]{0,63}$";
export const EXTENSION_NAME_PATTERN = "^x-(ai|service|business)-";

export const SOURCES = ["openapi", "overlay", "sdk", "mcp", "manual"] as const;
export const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] as const;
export const RISKS = ["low", "medium", "high"] as const;
export const PARAM_LOCATIONS = ["query", "body", "path", "header"] as const;
export const SEVERITIES = ["error", "warning", "info"] as const;
export const CONFIRM_OPS = [
  ">",
  ">=",
  "<",
  "<=",
  "==",
  "!=",
  "equals",
  "not_equals",
  "in",
  "not_in",
  "exists",
  "not_empty",
  "equals_subject",
  "not_equals_subject",
  "equals_subject_tenant",
  "not_equals_subject_tenant",
] as const;

export const LIMITS = {
  name: 64,
  description: 500,
  scope: 191,
  confirmPrompt: 200,
  confirmWhen: 20,
  contextItems: 50,
  contextItemLength: 100,
  timeoutMs: 60_000,
  label: 120,
  param: 191,
} as const;

export type Source = (typeof SOURCES)[number];
export type HttpMethod = (typeof METHODS)[number];
export type Risk = (typeof RISKS)[number];
export type ParamLocation = (typeof PARAM_LOCATIONS)[number];
export type Severity = (typeof SEVERITIES)[number];
export type ConfirmOp = (typeof CONFIRM_OPS)[number];

// A plain `enum` keyword reads better in the exported files than TypeBox's anyOf-of-const.
function StringEnum<T extends readonly string[]>(values: T) {
  return Type.Unsafe<T[number]>({ type: "string", enum: [...values] });
}

const JsonValue = Type.Unknown();

export const ConfirmConditionSchema = Type.Object(
  {
    param: Type.String({ minLength: 1, maxLength: LIMITS.param }),
    op: StringEnum(CONFIRM_OPS),
    value: Type.Optional(JsonValue),
    label: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.label })),
  },
  { additionalProperties: false },
);

export const DiagnosticSchema = Type.Object(
  {
    severity: StringEnum(SEVERITIES),
    path: Type.String({ minLength: 1 }),
    code: Type.String({ minLength: 1 }),
    message: Type.String({ minLength: 1 }),
    suggestion: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

export const InputSchemaSchema = Type.Unsafe<{
  type: "object";
  properties: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
}>({
  type: "object",
  properties: {
    type: { type: "string", const: "object" },
    properties: { type: "object" },
    required: { type: "array", items: { type: "string" }, uniqueItems: true },
  },
  required: ["type", "properties"],
  additionalProperties: true,
});

export const ParamInSchema = Type.Unsafe<Record<string, ParamLocation>>({
  type: "object",
  additionalProperties: { type: "string", enum: [...PARAM_LOCATIONS] },
});

export const ExtensionsSchema = Type.Unsafe<Record<string, unknown>>({
  type: "object",
  propertyNames: { pattern: EXTENSION_NAME_PATTERN },
  additionalProperties: true,
});

export const ToolDefinitionSchema = Type.Object(
  {
    schemaVersion: Type.Literal(TOOL_SCHEMA_VERSION),
    name: Type.String({ minLength: 1, maxLength: LIMITS.name, pattern: TOOL_NAME_PATTERN }),
    source: StringEnum(SOURCES),
    method: StringEnum(METHODS),
    path: Type.String({ minLength: 1, pattern: "^/" }),
    description: Type.String({ minLength: 1, maxLength: LIMITS.description }),
    scope: Type.String({ minLength: 1, maxLength: LIMITS.scope }),
    risk: StringEnum(RISKS),
    confirmRequired: Type.Boolean(),
    rateLimitPerMin: Type.Integer({ minimum: 0 }),
    requiresSubject: Type.Boolean(),
    sensitive: Type.Boolean(),
    readonly: Type.Boolean(),
    idempotent: Type.Boolean(),
    timeoutMs: Type.Integer({ minimum: 0, maximum: LIMITS.timeoutMs }),
    confirmPrompt: Type.String({ maxLength: LIMITS.confirmPrompt }),
    confirmWhen: Type.Optional(
      Type.Array(ConfirmConditionSchema, { maxItems: LIMITS.confirmWhen }),
    ),
    context: Type.Array(Type.String({ minLength: 1, maxLength: LIMITS.contextItemLength }), {
      maxItems: LIMITS.contextItems,
    }),
    extensions: ExtensionsSchema,
    inputSchema: InputSchemaSchema,
    paramIn: ParamInSchema,
  },
  { additionalProperties: false },
);

export const CompileResultSchema = Type.Object(
  {
    tools: Type.Array(ToolDefinitionSchema),
    diagnostics: Type.Array(DiagnosticSchema),
  },
  { additionalProperties: false },
);

export type ConfirmCondition = Static<typeof ConfirmConditionSchema>;
export type Diagnostic = Static<typeof DiagnosticSchema>;
export type ToolDefinition = Static<typeof ToolDefinitionSchema>;
export type CompileResult = Static<typeof CompileResultSchema>;

const SCHEMA_BASE = "https://switchyard.dev/schemas/";

/** The four exported schema files: file name (without .json) → title and TypeBox value. */
export const SCHEMA_FILES: Readonly<Record<string, { title: string; schema: TSchema }>> = {
  "tool-definition.v1": {
    title: "Tool definition (service.tool-definition.v1)",
    schema: ToolDefinitionSchema,
  },
  "confirm-condition": { title: "Confirm condition", schema: ConfirmConditionSchema },
  diagnostic: { title: "Compiler diagnostic", schema: DiagnosticSchema },
  "compile-result": { title: "Compile result", schema: CompileResultSchema },
};

/**
 * The JSON Schema 2020-12 document for one exported file. JSON round-tripping drops TypeBox's
 * symbol-keyed metadata so the value compares equal to the parsed file.
 */
export function schemaFileContent(file: string): Record<string, unknown> {
  const entry = SCHEMA_FILES[file];
  if (!entry) throw new Error(`unknown schema file ${file}`);
  const body = JSON.parse(JSON.stringify(entry.schema)) as Record<string, unknown>;
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `${SCHEMA_BASE}${file}.json`,
    title: entry.title,
    ...body,
  };
}
