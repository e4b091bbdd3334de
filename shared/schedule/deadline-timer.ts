import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { ensureDurable } from "../bus/index.ts";
import { RunSummary } from "../domain/index.ts";
import { traceHeaders } from "../trace/index.ts";
import { DEADLINE_STREAM, deadlineConsumerName, deadlineSubject } from "./streams.ts";

/** Timers looked at (or parked) at once per deadline length: the in-order window. */
export const DEADLINE_WINDOW = 512;

/**
 * Creates the consumer of one deadline length. Whoever publishes the first timer of a length
 * creates it first, so the executor replicas find it (they list the stream's consumers).
 */
export async function ensureDeadlineConsumer(
  jsm: JetStreamManager,
  deadlineMs: number,
): Promise<string> {
  const name = deadlineConsumerName(deadlineMs);
  await ensureDurable(jsm, {
    stream: DEADLINE_STREAM,
    name,
    filterSubject: deadlineSubject(deadlineMs),
    ackWaitMs: 30_000,
    maxAckPending: DEADLINE_WINDOW,
  });
  return name;
}

/** A deadline timer: one job handed to an executor that finishes it later. */
export const DeadlineTimerSchema = Type.Object(
  {
    client_id: Type.String(),
    job_id: Type.String(),
    route: Type.String(),
    created_at: Type.String(),
    due_at: Type.String(),
    /** The job subject's sequence when the timer was set; the expiry append expects it. */
    expected_seq: Type.Integer({ minimum: 0 }),
    run: Type.Optional(RunSummary),
  },
  { additionalProperties: false },
);
export type DeadlineTimer = Static<typeof DeadlineTimerSchema>;

const checker = TypeCompiler.Compile(DeadlineTimerSchema);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Parses a timer; undefined when the bytes are not one (the message is terminated). */
export function decodeDeadlineTimer(bytes: Uint8Array): DeadlineTimer | undefined {
  try {
    const value: unknown = JSON.parse(decoder.decode(bytes));
    return checker.Check(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stores a deadline timer on the subject of its deadline length (`deadlineMs`). One timer per
 * hand-over: a republish after a crash is dropped by the duplicate window. The job's trace
 * context rides in a `traceparent` header, so the expiry's event continues the job's trace.
 */
export async function publishDeadlineTimer(
  js: JetStreamClient,
  timer: DeadlineTimer,
  options: { readonly deadlineMs: number; readonly traceparent?: string | undefined },
): Promise<void> {
  await js.publish(deadlineSubject(options.deadlineMs), encoder.encode(JSON.stringify(timer)), {
    msgID: `deadline:${timer.job_id}:${timer.expected_seq}`,
    ...(options.traceparent ? { headers: traceHeaders(options.traceparent) } : {}),
  });
}
