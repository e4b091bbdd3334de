import { Type } from "@sinclair/typebox";
import { DURATION_PATTERN } from "../../schema/index.ts";
import type { ExecutorKindDescriptor } from "../descriptor.ts";

/** A NATS executor: tasks go to the work queue sy.task.<route>, pulled by shared/worker. */
export const NatsExecutorSchema = Type.Object(
  {
    kind: Type.Literal("nats"),
    ack_wait: Type.String({
      pattern: DURATION_PATTERN,
      default: "30s",
      description: "How long a silent worker keeps a task before it is redelivered.",
    }),
    max_deliver: Type.Integer({ minimum: 1, maximum: 100, default: 5 }),
  },
  { additionalProperties: false },
);

/** Workers write their own status events; the hub only aborts its own waits on a cancel. */
export const natsExecutor: ExecutorKindDescriptor<{ readonly kind: "nats" }> = {
  name: "nats",
  config: NatsExecutorSchema,
};
