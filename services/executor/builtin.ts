import type { RouteConfig } from "../../shared/config/index.ts";

/** The builtin executor config of a route. */
export type BuiltinExecutor = Extract<RouteConfig["executor"], { kind: "builtin" }>;

export type BuiltinResult = { readonly kind: "done"; readonly output: unknown };

/** Context a builtin may use: a keep-alive for long work, and a signal that aborts on shutdown. */
export interface BuiltinContext {
  readonly working: () => void;
  readonly signal: AbortSignal;
}

/** Runs a builtin executor: echo returns the input, sleep waits sleep_ms then returns it. */
export async function runBuiltin(
  executor: BuiltinExecutor,
  input: string,
  ctx: BuiltinContext,
): Promise<BuiltinResult> {
  switch (executor.name) {
    case "echo":
      return { kind: "done", output: input };
    case "sleep": {
      const ms = executor.sleep_ms;
      const keepAlive = setInterval(ctx.working, 3_000);
      // The signal is the process's shutdown signal, shared by every job: the listener must go
      // when the job ends, or each sleep job leaks one (seen as unbounded executor RSS).
      let onAbort: (() => void) | undefined;
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, ms);
          onAbort = () => {
            clearTimeout(timer);
            reject(new Error("aborted"));
          };
          ctx.signal.addEventListener("abort", onAbort, { once: true });
        });
      } finally {
        clearInterval(keepAlive);
        if (onAbort) ctx.signal.removeEventListener("abort", onAbort);
      }
      return { kind: "done", output: input };
    }
    default: {
      const unreachable: never = executor.name;
      return unreachable;
    }
  }
}
