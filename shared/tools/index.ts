/**
 * Tool definitions (spec 2.3–2.6): the record schemas, validation, the compiler from OpenAPI,
 * Overlays, MCP, manual and SDK sources, confirmation rules and the tool-set store.
 */
export { DIAGNOSTIC_CODES, type DiagnosticCode } from "./codes.ts";
export { type CompileInput, compile, hasErrors, serializeResult } from "./compile.ts";
export {
  type ConfirmationDecision,
  conditionHolds,
  evaluateConfirmation,
  type Principal,
} from "./confirm.ts";
export {
  classifyDocument,
  compileFromFiles,
  type InputKind,
  type InputSpec,
  loadInputs,
  parseDocumentText,
  parseInputArg,
} from "./load.ts";
export { compileMcpTools, MCP_METHOD, mcpRisk, mcpToolPath } from "./mcp.ts";
export { fetchMcpTools, type McpServerSpec } from "./mcp-live.ts";
export { nameFromMethodPath, sanitizeName, shortHash } from "./naming.ts";
export { applyOverlay, overlaySchema, validateOverlay } from "./overlay.ts";
export type { ToolSpec } from "./record.ts";
export { looksMutating, methodDefaults } from "./risk.ts";
export * from "./schemas.ts";
export { defineTool } from "./sdk.ts";
export { type ToolSetStats, toolSetStats } from "./stats.ts";
export {
  createToolSetStore,
  openToolSetStore,
  type StoredToolSet,
  TOOLSET_BUCKET,
  ToolSetRejected,
  type ToolSetStore,
} from "./store.ts";
export {
  isCompileResult,
  isToolDefinition,
  validateCompileResult,
  validateToolDefinition,
} from "./validate.ts";
