import { decodeEvent, PoisonMessageError } from "../bus/index.ts";
import { type JobEvent, type JobState, transition } from "../domain/index.ts";
import type { EventStoreDeps } from "./read.ts";
import type { JobRef } from "./subjects.ts";

/** One stored event of a job with its stream sequence and the server's receive time. */
export interface HistoryEntry {
  readonly seq: number;
  /** When the stream stored it (RFC 3339). */
  readonly time: string;
  readonly event: JobEvent;
}

/** A job's history is read in one go only up to this many events (a timeline, a heal). */
export const MAX_HISTORY = 10_000;

/**
 * Every event of one job, in stream order, read from the stream leader message by message
 * (`next_by_subj` on the job's subjects). Not for the common path: a job has a handful of events,
 * and this runs for an operator's timeline and when a projection heals a job after a crash.
 */
export async function readJobHistory(deps: EventStoreDeps, ref: JobRef): Promise<HistoryEntry[]> {
  const subject = deps.layout.filters.job(ref);
  const stream = deps.layout.streamOf(ref);
  const entries: HistoryEntry[] = [];
  let seq = 1;
  while (entries.length < MAX_HISTORY) {
    // nats.js types the request as seq or last_by_subj only; the server (2.9+) also takes
    // next_by_subj (the first message at or after seq on that subject).
    const query = { seq, next_by_subj: subject };
    const msg = await deps.jsm.streams.getMessage(stream, query);
    if (msg === null) break;
    seq = msg.seq + 1;
    try {
      entries.push({ seq: msg.seq, time: msg.time.toISOString(), event: decodeEvent(msg.data) });
    } catch (err) {
      if (!(err instanceof PoisonMessageError)) throw err;
    }
  }
  return entries;
}

/** The view a history folds to, with `seq` set to the last event applied. */
export function foldHistory(entries: readonly HistoryEntry[]): JobState {
  let state: JobState = null;
  for (const { seq, event } of entries) {
    const result = transition(state, event);
    if (result.state !== null) state = { ...result.state, seq };
  }
  return state;
}
