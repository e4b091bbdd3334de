import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { BuiltinExecutorSchema, builtinExecutor } from "./builtin/index.ts";
import type {
  AnswerCap,
  CancelRequestTarget,
  ExecutorKindDescriptor,
  KindedConfig,
  KindIssue,
} from "./descriptor.ts";
import { HttpExecutorSchema, httpExecutor } from "./http/index.ts";
import { NatsExecutorSchema, natsExecutor } from "./nats/index.ts";

export type {
  AnswerCap,
  CancelRequestTarget,
  ExecutorKindDescriptor,
  KindedConfig,
  KindIssue,
} from "./descriptor.ts";
export type { HttpExecutorConfig } from "./http/index.ts";

/**
 * `routes[].executor`: one member per kind. The kinds that ship are typed here; a kind registered
 * later (registerKindDescriptor) joins the same union, so the config loader accepts its routes.
 */
export const ExecutorConfigSchema = Type.Union([
  BuiltinExecutorSchema,
  HttpExecutorSchema,
  NatsExecutorSchema,
]);
export type ExecutorConfig = Static<typeof ExecutorConfigSchema>;
/** The kinds that ship: `builtin`, `http`, `nats`; derived from the config's union. */
export type ExecutorKindName = ExecutorConfig["kind"];
/** The `kind` literals of the shipped configs, as a schema (a job.dispatched event's `target`). */
export const ExecutorKindSchema = Type.Index(ExecutorConfigSchema, ["kind"]);

const registry = new Map<string, ExecutorKindDescriptor>();

/**
 * Adds a kind: its config joins `routes[].executor` and its capabilities are asked for its
 * routes. Register before loading the config; the same descriptor registered again is a no-op,
 * another one of the same name an error.
 */
export function registerKindDescriptor<C extends KindedConfig>(
  descriptor: ExecutorKindDescriptor<C>,
): () => void {
  const members: TSchema[] = ExecutorConfigSchema.anyOf;
  const unregister = () => {
    if (registry.get(descriptor.name) !== descriptor) return;
    registry.delete(descriptor.name);
    const at = members.indexOf(descriptor.config);
    if (at >= 0) members.splice(at, 1);
  };
  const same = registry.get(descriptor.name);
  if (same === descriptor) return unregister;
  if (same) throw new Error(`executor kind ${descriptor.name} is registered already`);
  registry.set(descriptor.name, descriptor);
  if (!members.includes(descriptor.config)) members.push(descriptor.config);
  return unregister;
}

registerKindDescriptor(builtinExecutor);
registerKindDescriptor(httpExecutor);
registerKindDescriptor(natsExecutor);

/** Whether an executor config is of this kind: narrows a route's executor to the kind's config. */
export function isConfigOf<C extends KindedConfig>(
  descriptor: ExecutorKindDescriptor<C>,
  executor: KindedConfig,
): executor is C {
  return executor.kind === descriptor.name;
}

/** The kind of an executor config (every config passed the schema, so its kind is registered). */
export function executorKindOf(executor: KindedConfig): ExecutorKindDescriptor {
  const kind = registry.get(executor.kind);
  if (!kind) throw new Error(`executor kind ${executor.kind} is not registered`);
  return kind;
}

/** Config checks of a route's executor beyond the schema, keyed under `key`. */
export function executorIssues(executor: KindedConfig, key: string): KindIssue[] {
  return executorKindOf(executor).check?.(executor, key) ?? [];
}

/** The signed cancel request a cancelled job of this executor gets, if its kind sends one. */
export function cancelRequestOf(executor: KindedConfig): CancelRequestTarget | undefined {
  return executorKindOf(executor).cancelRequest?.(executor);
}

/** SHA-256 (hex) of the tokens that may report on jobs of this executor; none: empty. */
export function reportTokensOf(executor: KindedConfig): readonly string[] {
  return executorKindOf(executor).reportTokens?.(executor) ?? [];
}

/** The largest answer a job of this executor stores in one event, if its kind has one. */
export function answerCapOf(executor: KindedConfig): AnswerCap | undefined {
  return executorKindOf(executor).answerCap?.(executor);
}
