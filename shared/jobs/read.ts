import type { JetStreamManager } from "@nats-io/jetstream";
import { decodeEvent, PoisonMessageError } from "../bus/index.ts";
import type { EventStreamKind, JobEvent } from "../domain/index.ts";
import type { EventLayout } from "./layout.ts";
import type { JobRef } from "./subjects.ts";

/** What reads a job's events need: the manager and the layout that names the job's stream. */
export interface EventStoreDeps {
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
}

export interface StoredEvent {
  readonly seq: number;
  readonly event: JobEvent;
}

/** A stored message as it is, before it is decoded: it may be poison. */
export interface StoredMessage {
  readonly seq: number;
  readonly data: Uint8Array;
}

/**
 * The last message on one of a job's subjects, read from the stream leader (not a direct get, which
 * a follower may answer with stale data). null when the subject is empty.
 */
export async function readLastMessage(
  deps: EventStoreDeps,
  ref: JobRef,
  kind: EventStreamKind,
): Promise<StoredMessage | null> {
  const msg = await deps.jsm.streams.getMessage(deps.layout.streamOf(ref), {
    last_by_subj: deps.layout.subject(ref, kind),
  });
  return msg === null ? null : { seq: msg.seq, data: msg.data };
}

/**
 * The last event on one of a job's subjects (see readLastMessage). null when the subject is empty;
 * throws PoisonMessageError when its last message is not a valid event.
 */
export async function readLastEvent(
  deps: EventStoreDeps,
  ref: JobRef,
  kind: EventStreamKind,
): Promise<StoredEvent | null> {
  const msg = await readLastMessage(deps, ref, kind);
  return msg === null ? null : { seq: msg.seq, event: decodeEvent(msg.data) };
}

/**
 * When a job was created: its run.requested's time (epoch ms), read by its subject; undefined
 * when the client has no such job, or its run.requested is poison (every consumer terminated it:
 * the job has no view and no row). The search index keys a job's row with it (shared/search).
 */
export async function readCreatedMs(
  deps: EventStoreDeps,
  ref: JobRef,
): Promise<number | undefined> {
  const msg = await readLastMessage(deps, ref, "run");
  if (msg === null) return undefined;
  try {
    return Date.parse(decodeEvent(msg.data).occurred_at);
  } catch (err) {
    if (err instanceof PoisonMessageError) return undefined;
    throw err;
  }
}

/**
 * The client that owns a job known only by its id, from the subject holding its run.requested
 * (stream info with a subject filter: no message is read). undefined when there is no such job.
 */
export async function findJobClient(
  deps: EventStoreDeps,
  jobId: string,
): Promise<string | undefined> {
  const { layout } = deps;
  const info = await deps.jsm.streams.info(layout.streamOf({ job_id: jobId }), {
    subjects_filter: layout.filters.anyClientRun(jobId),
  });
  const subject = Object.keys(info.state.subjects ?? {})[0];
  return subject === undefined ? undefined : layout.refOfSubject(subject)?.client_id;
}

/** The run.requested of a job known only by its id (any client); null when there is none. */
export async function readRunOfJob(
  deps: EventStoreDeps,
  jobId: string,
): Promise<StoredEvent | null> {
  const msg = await deps.jsm.streams.getMessage(deps.layout.streamOf({ job_id: jobId }), {
    last_by_subj: deps.layout.filters.anyClientRun(jobId),
  });
  if (msg === null) return null;
  return { seq: msg.seq, event: decodeEvent(msg.data) };
}
