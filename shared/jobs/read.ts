import type { JetStreamManager } from "@nats-io/jetstream";
import { decodeEvent, TOPOLOGY } from "../bus/index.ts";
import type { EventStreamKind, JobEvent } from "../domain/index.ts";
import { type JobRef, jobRefOfSubject, jobSubject, subjectFilters } from "./subjects.ts";

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

/**
 * The client that owns a job known only by its id, from the subject holding its run.requested
 * (stream info with a subject filter: no message is read). undefined when there is no such job.
 */
export async function findJobClient(
  jsm: JetStreamManager,
  jobId: string,
): Promise<string | undefined> {
  const info = await jsm.streams.info(TOPOLOGY.eventsStream, {
    subjects_filter: subjectFilters.anyClientRun(jobId),
  });
  const subject = Object.keys(info.state.subjects ?? {})[0];
  return subject === undefined ? undefined : jobRefOfSubject(subject)?.client_id;
}

/** The run.requested of a job known only by its id (any client); null when there is none. */
export async function readRunOfJob(
  jsm: JetStreamManager,
  jobId: string,
): Promise<StoredEvent | null> {
  const msg = await jsm.streams.getMessage(TOPOLOGY.eventsStream, {
    last_by_subj: subjectFilters.anyClientRun(jobId),
  });
  if (msg === null) return null;
  return { seq: msg.seq, event: decodeEvent(msg.data) };
}
