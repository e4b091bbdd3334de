import type { JetStreamManager } from "@nats-io/jetstream";
import { decodeEvent } from "../bus/codec.ts";
import { TOPOLOGY } from "../bus/topology-names.ts";
import type { EventStreamKind, JobEvent } from "../domain/index.ts";
import { type JobRef, jobSubject } from "./subjects.ts";

export interface StoredEvent {
  readonly seq: number;
  readonly event: JobEvent;
}

/**
 * The last event on one of a job's subjects, read from the stream leader (not a direct get, which
 * a follower may answer with stale data). null when the subject is empty.
 */
export async function readLastEvent(
  jsm: JetStreamManager,
  ref: JobRef,
  kind: EventStreamKind,
): Promise<StoredEvent | null> {
  const msg = await jsm.streams.getMessage(TOPOLOGY.eventsStream, {
    last_by_subj: jobSubject(ref, kind),
  });
  if (msg === null) return null;
  return { seq: msg.seq, event: decodeEvent(msg.data) };
}
