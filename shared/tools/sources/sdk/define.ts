import { completeToolRecord, type ToolSpec } from "../../record.ts";
import type { ToolDefinition } from "../../schemas.ts";

const SDK_TOOL = Symbol.for("switchyard.sdk-tool");

/**
 * Declares a tool in TypeScript. Missing fields get the same defaults as a manual definition
 * (method POST, path /tools/<name>, risk from the method). `switchyard tools compile` picks up
 * every exported defineTool() result of a .ts/.js module and validates it there, so a mistake
 * becomes a diagnostic instead of an exception at import time.
 */
export function defineTool(spec: ToolSpec): ToolDefinition {
  const record = completeToolRecord(spec as Record<string, unknown>, "sdk") as ToolDefinition;
  Object.defineProperty(record, SDK_TOOL, { value: true, enumerable: false });
  return record;
}

/** Whether a value came from defineTool(). */
export function isSdkTool(value: unknown): value is ToolDefinition {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as Record<symbol, unknown>)[SDK_TOOL] === true
  );
}

/** Collects defineTool() results from a module's exports (single values or arrays), sorted by export name. */
export function sdkToolsFromModule(mod: Record<string, unknown>): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  for (const key of Object.keys(mod).sort()) {
    const v = mod[key];
    if (isSdkTool(v)) out.push(v);
    else if (Array.isArray(v)) for (const item of v) if (isSdkTool(item)) out.push(item);
  }
  return out;
}
