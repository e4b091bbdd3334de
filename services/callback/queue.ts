import type { JetStreamClient } from "@nats-io/jetstream";
import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { callbackQueueSubject } from "../../shared/bus/index.ts";
import type { DeliveryTrigger } from "../../shared/domain/index.ts";

/**
 * A callback delivery waiting in SWITCHYARD_CALLBACKS: a retry at its scheduled time, a delivery
 * deferred because its destination's lane was full, or an operator's redelivery. It is only a
 * wake-up: when it is due, the service reads the job's `.cb` log and the domain decides the step,
 * so a stale or repeated entry cannot send an attempt twice or skip one.
 */
const QueueEntrySchema = Type.Object(
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
export type QueueEntry = Static<typeof QueueEntrySchema> & { readonly trigger: DeliveryTrigger };

const checker = TypeCompiler.Compile(QueueEntrySchema);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Parses an entry; undefined when the bytes are not one (the message is terminated). */
export function decodeQueueEntry(bytes: Uint8Array): QueueEntry | undefined {
  try {
    const value: unknown = JSON.parse(decoder.decode(bytes));
    return checker.Check(value) ? (value as QueueEntry) : undefined;
  } catch {
    return undefined;
  }
}

/** Stores an entry; it replaces any older entry of the same job. Resolves once stored. */
export async function enqueueDelivery(js: JetStreamClient, entry: QueueEntry): Promise<void> {
  await js.publish(
    callbackQueueSubject(entry.client_id, entry.job_id),
    encoder.encode(JSON.stringify(entry)),
  );
}
