import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ToolDefinition } from "./schemas.ts";
import { validateCompileResult } from "./validate.ts";

/** NATS KV bucket that holds published tool sets. */
export const TOOLSET_BUCKET = "sy_toolsets";

/** Tool-set names double as KV keys, so they keep to a key-safe alphabet. */
export const TOOLSET_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** What the store keeps under a tool-set name. */
export interface StoredToolSet {
  name: string;
  tools: ToolDefinition[];
}

export interface ToolSetStore {
  /** Validates and stores a compileResult's tools under `name`; returns the KV revision. */
  publish(name: string, compileResult: unknown): Promise<number>;
  /** The tools of a published set, or undefined when no set has that name. */
  getToolSet(name: string): Promise<ToolDefinition[] | undefined>;
  /** Published set names, sorted. */
  list(): Promise<string[]>;
}

/** Why publish refused a tool set. */
export class ToolSetRejected extends Error {
  constructor(
    message: string,
    readonly problems: string[] = [],
  ) {
    super(message);
    this.name = "ToolSetRejected";
  }
}

/**
 * A tool-set store over a NATS KV bucket. Publishing refuses anything that is not a valid
 * compileResult, that holds error diagnostics, or whose tool names repeat, so what the
 * executor attaches to a task has always passed the same checks as the compiler output.
 */
export function createToolSetStore({ kv }: { kv: KV }): ToolSetStore {
  const checkName = (name: string) => {
    if (!TOOLSET_NAME_PATTERN.test(name)) {
      throw new ToolSetRejected(
        `tool-set name ${JSON.stringify(name)} must match ${TOOLSET_NAME_PATTERN.source}`,
      );
    }
  };
  return {
    async publish(name, compileResult) {
      checkName(name);
      const problems = validateCompileResult(compileResult);
      if (problems.length > 0) {
        throw new ToolSetRejected(
          "not a valid compileResult",
          problems.map((p) => `${p.path}: ${p.message}`),
        );
      }
      const result = compileResult as {
        tools: ToolDefinition[];
        diagnostics: { severity: string; code: string; path: string }[];
      };
      const errors = result.diagnostics.filter((d) => d.severity === "error");
      if (errors.length > 0) {
        throw new ToolSetRejected(
          `the compileResult has ${errors.length} error diagnostic(s)`,
          errors.map((d) => `${d.path}: ${d.code}`),
        );
      }
      const names = new Set<string>();
      for (const t of result.tools) {
        if (names.has(t.name)) throw new ToolSetRejected(`tool name ${t.name} appears twice`);
        names.add(t.name);
      }
      const stored: StoredToolSet = { name, tools: result.tools };
      return kv.put(name, JSON.stringify(stored));
    },
    async getToolSet(name) {
      if (!TOOLSET_NAME_PATTERN.test(name)) return undefined;
      const entry = await kv.get(name);
      if (entry?.operation !== "PUT" || entry.length === 0) return undefined;
      return (entry.json() as StoredToolSet).tools;
    },
    async list() {
      const out: string[] = [];
      for await (const k of await kv.keys()) out.push(k);
      return out.sort();
    },
  };
}

/** Opens (creating when missing) the sy_toolsets bucket and returns a store over it. */
export async function openToolSetStore(nc: NatsConnection): Promise<ToolSetStore> {
  const kv = await new Kvm(nc).create(TOOLSET_BUCKET, { history: 5 });
  return createToolSetStore({ kv });
}
