import { createHash, randomBytes } from "node:crypto";
import { type KV, Kvm } from "@nats-io/kv";
import { type ObjectStore, Objm } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { createBucket } from "../bus/index.ts";
import { isObject } from "./schema-merge.ts";
import type { ToolDefinition } from "./schemas.ts";
import { validateCompileResult } from "./validate.ts";

/** NATS KV bucket with one small pointer per tool-set name (the contract others read). */
export const TOOLSET_BUCKET = "sy_toolsets";
/** NATS Object Store bucket with the tool sets themselves, in chunks, any size. */
export const TOOLSET_OBJECTS = "sy_toolset_objects";
/** Versions kept per set: the pointer's KV history and the objects it names. */
export const TOOLSET_HISTORY = 5;

/** Tool-set names double as KV keys, so they keep to a key-safe alphabet. */
export const TOOLSET_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * What the KV key of a set holds: which object has version `version`, and the SHA-256 of its
 * bytes (NDJSON, one tool per line), so a reader can refuse anything else.
 */
export interface ToolSetPointer {
  name: string;
  version: number;
  object: string;
  digest: string;
  bytes: number;
  tools: number;
  publishedAt: string;
}

/** The value Switchyard 0.1 stored under the key (the whole set); still read, never written. */
export interface StoredToolSet {
  name: string;
  tools: ToolDefinition[];
}

/**
 * Error codes that only say a tool was left out to keep the output within a size budget: the
 * rest of the set is sound, it just lacks the tools they name.
 */
export const BUDGET_OMISSION_CODES: ReadonlySet<string> = new Set([
  "budget.tool_omitted",
  "budget.compile_exceeded",
]);

export interface PublishOptions {
  /**
   * Publish a set whose only error diagnostics are budget omissions (BUDGET_OMISSION_CODES),
   * without the tools they name. Off by default: a set missing a tool must be asked for.
   */
  allowOmittedTools?: boolean;
}

export interface ToolSetStore {
  /** Validates and stores a compileResult's tools under `name` as a new version. */
  publish(name: string, compileResult: unknown, options?: PublishOptions): Promise<ToolSetPointer>;
  /** The tools of a published set (digest verified), or undefined when no set has that name. */
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

/** A published set whose bytes are missing or do not match the digest its pointer names. */
export class ToolSetCorrupt extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolSetCorrupt";
  }
}

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

type DiagnosticLike = { severity: string; code: string; path: string; message: string };

/**
 * Refuses a set with error diagnostics. When every error is a budget omission the refusal says
 * so, names the tools (their messages do) and the two ways on; allowOmittedTools takes the second.
 */
function checkErrors(diagnostics: DiagnosticLike[], options: PublishOptions): void {
  const errors = diagnostics.filter((d) => d.severity === "error");
  if (errors.length === 0) return;
  const omissions = errors.every((d) => BUDGET_OMISSION_CODES.has(d.code));
  if (omissions && options.allowOmittedTools) return;
  const message = omissions
    ? `the compileResult has ${errors.length} error diagnostic(s), all tools left out by a size budget: compile again with a larger --max-tool-bytes or --max-output-bytes (0 = no limit), or publish with allowOmittedTools to publish the set without them`
    : `the compileResult has ${errors.length} error diagnostic(s)`;
  throw new ToolSetRejected(
    message,
    errors
      .slice(0, 50)
      .map((d) =>
        BUDGET_OMISSION_CODES.has(d.code)
          ? `${d.path}: ${d.code}: ${d.message}`
          : `${d.path}: ${d.code}`,
      ),
  );
}

/** The tools of a compileResult that may be published, or ToolSetRejected. */
function publishable(compileResult: unknown, options: PublishOptions): ToolDefinition[] {
  const problems = validateCompileResult(compileResult);
  if (problems.length > 0) {
    throw new ToolSetRejected(
      "not a valid compileResult",
      problems.slice(0, 50).map((p) => `${p.path}: ${p.message}`),
    );
  }
  const result = compileResult as { tools: ToolDefinition[]; diagnostics: DiagnosticLike[] };
  checkErrors(result.diagnostics, options);
  const names = new Set<string>();
  for (const t of result.tools) {
    if (names.has(t.name)) throw new ToolSetRejected(`tool name ${t.name} appears twice`);
    names.add(t.name);
  }
  return result.tools;
}

function parseNdjson(bytes: Uint8Array): ToolDefinition[] {
  const text = new TextDecoder().decode(bytes);
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as ToolDefinition);
}

interface StoreDeps {
  kv: KV;
  objects: ObjectStore;
}

const pointerOf = (value: unknown): ToolSetPointer | undefined =>
  isObject(value) && typeof value.object === "string" && typeof value.digest === "string"
    ? (value as unknown as ToolSetPointer)
    : undefined;

/** Deletes the set's objects that no pointer in the KV history names any more. */
async function prune({ kv, objects }: StoreDeps, name: string): Promise<void> {
  const keep = new Set<string>();
  for await (const e of await kv.history({ key: name })) {
    const p = e.operation === "PUT" && e.length > 0 ? pointerOf(e.json()) : undefined;
    if (p) keep.add(p.object);
  }
  for (const info of await objects.list()) {
    if (info.name.startsWith(`${name}/`) && !keep.has(info.name)) await objects.delete(info.name);
  }
}

/** Stores the bytes as the next version and points the KV key at them (compare-and-set). */
async function publishVersion(
  deps: StoreDeps,
  set: { name: string; bytes: Uint8Array; tools: number },
): Promise<ToolSetPointer> {
  const { kv, objects } = deps;
  const digest = sha256(set.bytes);
  for (let attempt = 0; attempt < 5; attempt++) {
    const entry = await kv.get(set.name);
    const previous =
      entry?.operation === "PUT" && entry.length > 0 ? pointerOf(entry.json()) : undefined;
    const version = (previous?.version ?? 0) + 1;
    // A unique object name: a racing publisher's object is never overwritten or deleted.
    const object = `${set.name}/v${version}-${randomBytes(4).toString("hex")}`;
    await objects.putBlob(
      { name: object, metadata: { digest, tools: String(set.tools) } },
      set.bytes,
    );
    const pointer: ToolSetPointer = {
      name: set.name,
      version,
      object,
      digest,
      bytes: set.bytes.length,
      tools: set.tools,
      publishedAt: new Date().toISOString(),
    };
    try {
      if (entry) await kv.update(set.name, JSON.stringify(pointer), entry.revision);
      else await kv.create(set.name, JSON.stringify(pointer));
    } catch {
      // Another publisher won this version: drop our object and try the next one.
      await objects.delete(object).catch(() => {});
      continue;
    }
    await prune(deps, set.name);
    return pointer;
  }
  throw new Error(`publishing ${set.name} kept racing with another publisher; try again`);
}

/** Reads the bytes a pointer names and checks them against its digest. */
async function readVerified(objects: ObjectStore, p: ToolSetPointer): Promise<ToolDefinition[]> {
  const bytes = await objects.getBlob(p.object);
  if (!bytes)
    throw new ToolSetCorrupt(
      `tool set ${p.name} version ${p.version}: object ${p.object} is missing`,
    );
  const digest = sha256(bytes);
  if (digest !== p.digest)
    throw new ToolSetCorrupt(
      `tool set ${p.name} version ${p.version}: digest ${digest} is not the published ${p.digest}`,
    );
  return parseNdjson(bytes);
}

function checkName(name: string): void {
  if (!TOOLSET_NAME_PATTERN.test(name)) {
    throw new ToolSetRejected(
      `tool-set name ${JSON.stringify(name)} must match ${TOOLSET_NAME_PATTERN.source}`,
    );
  }
}

/**
 * A tool-set store: the sets themselves in a JetStream Object Store (chunked, so no size limit
 * from max_payload), a small versioned pointer with their SHA-256 in the KV bucket. Publishing
 * refuses anything that is not a valid compileResult, that holds error diagnostics (budget
 * omissions only when allowOmittedTools says so), or whose tool names repeat, so what the executor attaches to a task has passed the compiler's checks;
 * reading verifies the digest, so it never hands out bytes other than those published. Read
 * sets are kept by digest, so a route reading the same set again costs one KV get.
 */
export function createToolSetStore(deps: StoreDeps): ToolSetStore {
  const cache = new Map<string, { digest: string; tools: ToolDefinition[] }>();
  return {
    async publish(name, compileResult, options = {}) {
      checkName(name);
      const tools = publishable(compileResult, options);
      const bytes = new TextEncoder().encode(tools.map((t) => `${JSON.stringify(t)}\n`).join(""));
      return publishVersion(deps, { name, bytes, tools: tools.length });
    },

    async getToolSet(name) {
      if (!TOOLSET_NAME_PATTERN.test(name)) return undefined;
      const entry = await deps.kv.get(name);
      if (entry?.operation !== "PUT" || entry.length === 0) return undefined;
      const value = entry.json() as unknown;
      const pointer = pointerOf(value);
      if (!pointer)
        return isObject(value) && Array.isArray(value.tools)
          ? (value as unknown as StoredToolSet).tools
          : undefined;
      const known = cache.get(name);
      if (known?.digest === pointer.digest) return known.tools;
      const tools = await readVerified(deps.objects, pointer);
      cache.set(name, { digest: pointer.digest, tools });
      return tools;
    },

    async list() {
      const out: string[] = [];
      for await (const k of await deps.kv.keys()) out.push(k);
      return out.sort();
    },
  };
}

/** Opens (creating when missing) the sy_toolsets bucket and its object store; returns a store. */
export async function openToolSetStore(nc: NatsConnection): Promise<ToolSetStore> {
  const kv = await createBucket(new Kvm(nc), TOOLSET_BUCKET, { history: TOOLSET_HISTORY });
  const objects = await new Objm(nc).create(TOOLSET_OBJECTS);
  return createToolSetStore({ kv, objects });
}
