import {
  type ExecutorKindDescriptor,
  type ExecutorKindName,
  type KindedConfig,
  registerKindDescriptor,
} from "../../../shared/executor-kinds/index.ts";
import { builtinKind } from "./builtin/index.ts";
import { httpKind } from "./http/index.ts";
import type { ExecutorKind } from "./kind.ts";
import { natsKind } from "./nats/index.ts";

export type { AdmittedJob, ExecutorKind, KindContext, KindRuntime, RouteOf } from "./kind.ts";

/**
 * How the shipped kinds run, by the `kind` of a route's executor config. Typed over the config's
 * union, so a shipped kind without a runtime here does not compile (and never falls back to
 * another kind's behaviour).
 */
const SHIPPED: Readonly<Record<ExecutorKindName, ExecutorKind>> = {
  builtin: builtinKind,
  http: httpKind,
  nats: natsKind,
};

const runtimes = new Map<string, ExecutorKind>(Object.entries(SHIPPED));

/** How jobs of a kind run here; undefined for a kind nobody registered. */
export function kindRuntime(name: string): ExecutorKind | undefined {
  return runtimes.get(name);
}

/**
 * An executor kind from one folder: what the hub knows of it (its descriptor: config, checks,
 * capabilities) and how its jobs run in the executor.
 */
export interface ExecutorKindModule<C extends KindedConfig> {
  readonly descriptor: ExecutorKindDescriptor<C>;
  readonly runtime: ExecutorKind;
}

/**
 * Adds a kind beside the shipped ones: its descriptor (config, checks, capabilities) for the whole
 * process, its runtime for the executor. Register before the config is loaded; the same module
 * registered again is a no-op. Returns what takes it out again (a test that registers one).
 */
export function registerExecutorKind<C extends KindedConfig>(
  kind: ExecutorKindModule<C>,
): () => void {
  const { name } = kind.descriptor;
  const same = runtimes.get(name);
  if (same !== undefined && same !== kind.runtime) {
    throw new Error(`executor kind ${name} is registered already`);
  }
  const unregisterDescriptor = registerKindDescriptor(kind.descriptor);
  runtimes.set(name, kind.runtime);
  return () => {
    if (runtimes.get(name) !== kind.runtime) return;
    runtimes.delete(name);
    unregisterDescriptor();
  };
}
