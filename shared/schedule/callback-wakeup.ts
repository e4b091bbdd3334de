import type { JetStreamClient } from "@nats-io/jetstream";
import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { DeliveryTrigger } from "../domain/index.ts";
import { callbackQueueSubject } from "./streams.ts";

/**
 * A callback delivery waiting in SWITCHYARD_CALLBACKS: a retry at its scheduled time, a delivery
 * deferred because its destination's lane was full, or an operator's redelivery. It is only a
 * wake-up: when it is due, the service reads the job's `.cb` log and the domain decides the step,
 * so a stale or repeated entry cannot send an attempt twice or skip one.
 */
const CallbackWakeupSchema = Type.Object(
  {
    client_id: Type.String(),
    job_id: Type.String(),
    /** Stream sequence of the job's final event (read by sequence when the entry is due). */
    final_seq: Type.Integer({ minimum: 1 }),
    due_at: Type.String(),
    trigger: Type.Union([
      Type.Object({ kind: Type.Literal("original") }, { additionalProperties: false }),
      Type.Object(
        {
          kind: Type.Literal("redelivery"),
          seq: Type.Integer({ minimum: 1 }),
          baseAttempts: Type.Integer({ minimum: 0 }),
        },
        { additionalProperties: false },
      ),
    ]),
    /** How many times a full lane deferred this delivery: the next deferral waits longer. */
    deferrals: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type CallbackWakeup = Static<typeof CallbackWakeupSchema> & {
  readonly trigger: DeliveryTrigger;
};

const checker = TypeCompiler.Compile(CallbackWakeupSchema);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Parses an entry; undefined when the bytes are not one (the message is terminated). */
export function decodeCallbackWakeup(bytes: Uint8Array): CallbackWakeup | undefined {
  try {
    const value: unknown = JSON.parse(decoder.decode(bytes));
    return checker.Check(value) ? (value as CallbackWakeup) : undefined;
  } catch {
    return undefined;
  }
}

/** Stores an entry; it replaces any older entry of the same job. Resolves once stored. */
export async function publishCallbackWakeup(
  js: JetStreamClient,
  entry: CallbackWakeup,
): Promise<void> {
  await js.publish(
    callbackQueueSubject(entry.client_id, entry.job_id),
    encoder.encode(JSON.stringify(entry)),
  );
}
