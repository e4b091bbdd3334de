import type { ToolDefinition } from "../../shared/tools/index.ts";

/** A valid record to mutate in bound tests. */
export function validTool(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const base: ToolDefinition = {
    schemaVersion: "service.tool-definition.v1",
    name: "get_pet",
    source: "openapi",
    method: "GET",
    path: "/pets/{id}",
    description: "Fetch one pet.",
    scope: "pets",
    risk: "low",
    confirmRequired: false,
    rateLimitPerMin: 0,
    requiresSubject: false,
    sensitive: false,
    readonly: true,
    idempotent: true,
    timeoutMs: 30000,
    confirmPrompt: "",
    context: ["pets"],
    extensions: {},
    inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    paramIn: { id: "path" },
  };
  return { ...base, ...overrides };
}

/** Repo root, resolved from this file so tests do not depend on the working directory. */
export const REPO_ROOT = new URL("../../", import.meta.url).pathname;
export const FIXTURES = new URL("../fixtures/tools/", import.meta.url).pathname;
