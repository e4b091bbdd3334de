import type { RouteConfig } from "../../shared/config/index.ts";

export type BuiltinResult = { readonly kind: "done"; readonly output: unknown };

/** Context a builtin may use: a keep-alive for long work, and a signal that aborts on shutdown. */
export interface BuiltinContext {
  readonly working: () => void;
  readonly signal: AbortSignal;
}

/** Runs a builtin executor: echo returns the input, sleep waits sleep_ms then returns it. */
export async function runBuiltin(
  route: RouteConfig,
  input: string,
  ctx: BuiltinContext,
): Promise<BuiltinResult> {
  switch (route.executor.name) {
    case "echo":
      return { kind: "done", output: input };
    case "sleep": {
      const ms = route.executor.sleep_ms;
      const keepAlive = setInterval(ctx.working, 5_000);
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, ms);
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(new Error("aborted"));
          });
        });
      } finally {
        clearInterval(keepAlive);
      }
      return { kind: "done", output: input };
    }
    default: {
      const unreachable: never = route.executor.name;
      return unreachable;
    }
  }
}
