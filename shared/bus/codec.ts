import { TypeCompiler } from "@sinclair/typebox/compiler";
import "../schema/index.ts";
import { type JobEvent, JobEvent as JobEventSchema } from "../domain/index.ts";

const checker = TypeCompiler.Compile(JobEventSchema);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Header naming the event type, so consumers can skip what they do not handle without parsing. */
export const EVENT_TYPE_HEADER = "Sy-Event-Type";
export const TRACEPARENT_HEADER = "traceparent";

/** Serialises an event; the stored bytes are what audit checkpoints hash. */
export function encodeEvent(event: JobEvent): Uint8Array {
  return encoder.encode(JSON.stringify(event));
}

/** A stored message that is not a valid event: consumers terminate it instead of retrying. */
export class PoisonMessageError extends Error {
  readonly code = "poison_message";
}

/** Parses and validates stored bytes against the event union. */
export function decodeEvent(bytes: Uint8Array): JobEvent {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch (err) {
    throw new PoisonMessageError("event is not JSON", { cause: err });
  }
  return checkEvent(value);
}

/** Validates an already parsed value against the event union. */
export function checkEvent(value: unknown): JobEvent {
  if (!checker.Check(value)) {
    const first = checker.Errors(value).First();
    throw new PoisonMessageError(
      `event fails its schema at ${first?.path ?? "/"}: ${first?.message}`,
    );
  }
  return value as JobEvent;
}
