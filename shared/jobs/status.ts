import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { decodeEvent, PoisonMessageError } from "../bus/index.ts";
import type { Clock } from "../clock/index.ts";
import {
  decideStatus,
  isStatusEventType,
  type JobStatus,
  type StatusEvent,
  type StatusIntent,
  type StatusRefusal,
  statusAfter,
} from "../domain/index.ts";
import type { IdGenerator } from "../ids/index.ts";
import { appendEvent } from "./append.ts";
import { keepDiscardedResult } from "./discarded.ts";
import { newEvent } from "./envelope.ts";
import { readJobHistory } from "./history.ts";
import type { EventLayout } from "./layout.ts";
import {
  type EventStoreDeps,
  readLastMessage,
  type StoredEvent,
  type StoredMessage,
} from "./read.ts";
import type { JobRef } from "./subjects.ts";

export type { StatusEvent, StatusEventType, StatusIntent } from "../domain/index.ts";

/** A job's status as its `.job` subject says, and the sequence a writer must expect. */
export interface CurrentStatus {
  readonly status: JobStatus;
  /** The event that names the status: the subject's last valid event (poison after it is not). */
  readonly last: StoredEvent | null;
  /**
   * Expected last subject sequence for the next append (0: nothing appended yet): the subject's
   * last message, poison or not, since the server compares against what is stored.
   */
  readonly seq: number;
}

/** A job nothing has been appended for yet: what a first delivery of run.requested assumes. */
export const QUEUED: CurrentStatus = { status: "queued", last: null, seq: 0 };

/**
 * Reads the job's status from the last event of its `.job` subject (from the stream leader).
 * Every status event is appended with optimistic concurrency, so the last one is always a legal
 * move and names the current status; an empty subject means `queued`. A subject that ends in
 * poison (a NATS worker's final event that fails the schema: every consumer terminates it) is
 * read past: the status is the last valid event's, and the next append expects the poison's
 * sequence. Expecting the valid event's would conflict on every round, and the job's deadline
 * timer could never end it.
 */
export async function readStatus(deps: EventStoreDeps, ref: JobRef): Promise<CurrentStatus> {
  const stored = await readLastMessage(deps, ref, "job");
  if (stored === null) return QUEUED;
  const last = decodeStored(stored) ?? (await lastStatusEventBefore(deps, ref, stored.seq));
  if (last === null || !isStatusEventType(last.event.type)) {
    return { status: "queued", last, seq: stored.seq };
  }
  return { status: statusAfter(last.event.type), last, seq: stored.seq };
}

/**
 * The last valid event of the job's `.job` subject (a poison one after it is read past, as in
 * readStatus); null when there is none. For folding a job's status, not for an append's expected
 * sequence (readStatus gives that).
 */
export async function readLastJobEvent(
  deps: EventStoreDeps,
  ref: JobRef,
): Promise<StoredEvent | null> {
  return (await readStatus(deps, ref)).last;
}

/** The stored message as an event; undefined when it is poison. */
function decodeStored(msg: StoredMessage): StoredEvent | undefined {
  try {
    return { seq: msg.seq, event: decodeEvent(msg.data) };
  } catch (err) {
    if (err instanceof PoisonMessageError) return undefined;
    throw err;
  }
}

/**
 * The last valid status event stored before `seq`, from the job's history (which skips poison).
 * Off the common path: only a subject that ends in poison is read whole. Events stored after
 * `seq` are left out: an append that expects `seq` conflicts with them and reads again.
 */
async function lastStatusEventBefore(
  deps: EventStoreDeps,
  ref: JobRef,
  seq: number,
): Promise<StoredEvent | null> {
  const history = await readJobHistory(deps, ref);
  const last = history.findLast((e) => e.seq < seq && isStatusEventType(e.event.type));
  return last === undefined ? null : { seq: last.seq, event: last.event };
}

export interface StatusWriterDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  readonly clock: Clock;
  readonly ids: IdGenerator;
}

/** One status write: the event a writer wants, and what it already knows of the job. */
export interface StatusWrite {
  readonly ref: JobRef;
  readonly intent: StatusIntent;
  /** The status the writer just read or wrote; without it the subject is read first. */
  readonly known?: CurrentStatus;
  readonly traceparent?: string;
  /**
   * Append only if nothing was appended since `known`: a lost race ends the write instead of
   * re-deciding (a writer whose step depends on the exact state it read).
   */
  readonly onlyIfUnchanged?: boolean;
}

/** What writeStatus did. */
export type WriteResult =
  | { readonly kind: "appended"; readonly seq: number; readonly event: StatusEvent }
  | {
      readonly kind: "refused";
      readonly current: CurrentStatus;
      readonly reason: StatusRefusal | "changed";
    };

const MAX_ROUNDS = 8;

/**
 * Decide, append, and on a lost race read and decide again: the one way status events are written
 * (executor kinds, deadline timers, executor reports, NATS workers). The domain's `decideStatus`
 * says whether the intent may be appended to the current status. The append expects the subject
 * sequence that was read, so two writers can never both finish a job.
 */
export async function writeStatus(
  deps: StatusWriterDeps,
  write: StatusWrite,
): Promise<WriteResult> {
  let current = write.known ?? (await readStatus(deps, write.ref));
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const decision = decideStatus(current.status, write.intent);
    if (decision.kind === "refuse") {
      // A result after a cancel is kept as history (nothing happens for any other refusal).
      if (decision.reason === "job_final") {
        await keepDiscardedResult(deps, { ref: write.ref, current, intent: write.intent });
      }
      return { kind: "refused", current, reason: decision.reason };
    }
    const event: StatusEvent = newEvent(deps, write.ref, decision.intent);
    const result = await appendEvent(deps, event, {
      expectedLastSubjectSeq: current.seq,
      ...(write.traceparent ? { traceparent: write.traceparent } : {}),
    });
    if (result.kind !== "conflict") return { kind: "appended", seq: result.seq, event };
    current = await readStatus(deps, write.ref);
    if (write.onlyIfUnchanged) return { kind: "refused", current, reason: "changed" };
  }
  throw new Error(`job ${write.ref.job_id}: status write kept conflicting`);
}

/** The status a write left the job in. */
export function statusAfterWrite(result: WriteResult): CurrentStatus {
  return result.kind === "appended"
    ? {
        status: statusAfter(result.event.type),
        last: { seq: result.seq, event: result.event },
        seq: result.seq,
      }
    : result.current;
}
