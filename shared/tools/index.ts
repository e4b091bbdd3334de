/**
 * Tool definitions (spec 2.3–2.6): the record schemas, validation, the compiler from OpenAPI,
 * Overlays, MCP, manual and SDK sources (one module each under sources/), confirmation rules and
 * the tool-set store.
 */
export { DIAGNOSTIC_CODES, type DiagnosticCode } from "./codes.ts";
export {
  type CompiledTool,
  type CompileInput,
  type CompileOptions,
  compile,
  compileTools,
  DEFAULT_BUDGETS,
  hasErrors,
  type InputKind,
  prepareInputs,
  serializeResult,
} from "./compile.ts";
export {
  type ConfirmationDecision,
  conditionHolds,
  evaluateConfirmation,
  type Principal,
} from "./confirm.ts";
export { DiagnosticSink } from "./diagnostics.ts";
export { planHandwritten } from "./handwritten.ts";
export { checkSchema, META_SCHEMA_ID, metaSchemaErrors } from "./json-schema.ts";
export {
  classifyDocument,
  compileFromFiles,
  type InputSpec,
  loadInputs,
  parseDocumentText,
  parseInputArg,
} from "./load.ts";
export { nameFromMethodPath, sanitizeName, shortHash } from "./naming.ts";
export {
  type OutputFormat,
  type WriteChunk,
  type WrittenSummary,
  writeCompileOutput,
} from "./output.ts";
export { type ReadOutput, readCompileOutput } from "./read-output.ts";
export type { ToolSpec } from "./record.ts";
export { looksMutating, methodDefaults } from "./risk.ts";
export * from "./schemas.ts";
export { registerToolSource } from "./sources/index.ts";
export { MCP_METHOD, mcpRisk, mcpToolPath } from "./sources/mcp/index.ts";
export { fetchMcpTools, type McpServerSpec } from "./sources/mcp/live.ts";
export { openApiVersion } from "./sources/openapi/index.ts";
export {
  applyOverlay,
  applyOverlays,
  overlaySchema,
  validateOverlay,
} from "./sources/overlay/apply.ts";
export { defineTool } from "./sources/sdk/define.ts";
export type { LoadedInput, PlannedTool, SourceContext, ToolSource } from "./sources/types.ts";
export { type ToolSetStats, toolSetStats } from "./stats.ts";
export {
  BUDGET_OMISSION_CODES,
  createToolSetStore,
  openToolSetStore,
  type PublishOptions,
  type StoredToolSet,
  TOOLSET_BUCKET,
  TOOLSET_HISTORY,
  TOOLSET_OBJECTS,
  ToolSetCorrupt,
  type ToolSetPointer,
  ToolSetRejected,
  type ToolSetStore,
} from "./store.ts";
export {
  isCompileResult,
  isToolDefinition,
  validateCompileResult,
  validateToolDefinition,
} from "./validate.ts";
