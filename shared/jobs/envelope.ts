import type { Clock } from "../clock/index.ts";
import {
  EVENT_SCHEMA_VERSION,
  type EventData,
  type EventOf,
  type JobEventType,
} from "../domain/index.ts";
import type { IdGenerator } from "../ids/index.ts";
import type { JobRef } from "./subjects.ts";

/** What an envelope needs besides the event: a fresh id and the time. */
export interface EnvelopeDeps {
  readonly clock: Clock;
  readonly ids: IdGenerator;
}

/** An event before its envelope: the type and its data (a StatusIntent is one). */
export interface EventIntent<T extends JobEventType> {
  readonly type: T;
  readonly data: EventData<T>;
}

/**
 * The one way a job event is made: the envelope (a new `evt` id, the schema version, the job's
 * ids and `occurred_at` from the clock) around an intent. Every append goes through it.
 */
export function newEvent<T extends JobEventType>(
  deps: EnvelopeDeps,
  ref: JobRef,
  intent: EventIntent<T>,
): EventOf<T> {
  // The cast: TypeScript cannot narrow a generic `type` to its member of the union.
  return {
    id: deps.ids.next("evt"),
    type: intent.type,
    schema_version: EVENT_SCHEMA_VERSION,
    job_id: ref.job_id,
    client_id: ref.client_id,
    occurred_at: deps.clock.now().toISOString(),
    data: intent.data,
  } as EventOf<T>;
}
