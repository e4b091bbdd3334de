import type { JetStreamClient } from "@nats-io/jetstream";
import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { RunSummary } from "../domain/index.ts";
import { deadlineSubject } from "./streams.ts";

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
 * hand-over: a republish after a crash is dropped by the duplicate window.
 */
export async function publishDeadlineTimer(
  js: JetStreamClient,
  timer: DeadlineTimer,
  deadlineMs: number,
): Promise<void> {
  await js.publish(deadlineSubject(deadlineMs), encoder.encode(JSON.stringify(timer)), {
    msgID: `deadline:${timer.job_id}:${timer.expected_seq}`,
  });
}
