import { Type } from "@sinclair/typebox";
import type { ExecutorKindDescriptor } from "../descriptor.ts";

/** Runs in the executor itself: `echo` answers the input, `sleep` waits first (demos, tests). */
export const BuiltinExecutorSchema = Type.Object(
  {
    kind: Type.Literal("builtin"),
    name: Type.Union([Type.Literal("echo"), Type.Literal("sleep")]),
    sleep_ms: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 0 }),
  },
  { additionalProperties: false },
);

export const builtinExecutor: ExecutorKindDescriptor<{ readonly kind: "builtin" }> = {
  name: "builtin",
  config: BuiltinExecutorSchema,
};
