import type { JsMsg } from "@nats-io/jetstream";
import type { JobEvent } from "../domain/index.ts";
import type { HistoryEntry } from "../jobs/index.ts";
import type { Lease } from "../lease/index.ts";

/** One delivered job event, kept with its message until its effect is written. */
export interface HeldEvent {
  readonly msg: JsMsg;
  readonly event: JobEvent;
}

/**
 * A job whose events were taken and whose effect is not written yet. The runner owns the events
 * and the timing; `state` is the read model's, opaque to the runner.
 */
export interface HeldJob<State> {
  /** `<client>.<job>`: the job view's KV key and the index's row key. */
  readonly key: string;
  readonly clientId: string;
  readonly jobId: string;
  /** Unwritten events, in arrival order. */
  readonly events: HeldEvent[];
  /** When the oldest unwritten event arrived. */
  readonly since: number;
  /** A redelivered message is among the events: the job is folded again from its history. */
  heal: boolean;
  /** A write of this job failed: the model reads its stored state instead of assuming one. */
  retried: boolean;
  /** The model's state: loaded, then folded with `events[0, folded)`. Undefined: not loaded. */
  state: State | undefined;
  folded: number;
}

/** A held job whose state is loaded and folded with all its events: ready to write. */
export type LoadedJob<State> = HeldJob<State> & { state: State };

/** What a read model's write may check: the runner's identity and whether it still leads. */
export interface Fence {
  /** The partition this runner folds. */
  readonly partition: number;
  /** The lease is held (or the runner has none). Checked by the runner before writes and acks. */
  holding(): boolean;
  /**
   * The model's store refused this runner outside a write (an idle heartbeat): it stops and
   * leads again, as after a write that threw {@link ProjectionFencedError}.
   */
  refused(reason: string): void;
}

/** One round's due jobs, handed to {@link ReadModel.write}. */
export interface WriteBatch<State> {
  /** Every job is loaded (and healed when it must be) and folded with all its events. */
  readonly jobs: readonly LoadedJob<State>[];
  /**
   * The stream sequence at or below which every delivered event is written once this batch is:
   * for a model that commits its position with its rows. Computed on call.
   */
  position(): number;
  /** The consumer's pending count at the last delivery (num_pending). */
  readonly pending: number;
}

/**
 * A projection of the job events: what the runner needs from a read model. Everything else
 * (consumption, batching and linger, held-back events, the ack floor, the lease and fencing,
 * backoff) is the runner's.
 */
export interface ReadModel<State> {
  /** For logs: "projector", "indexer". */
  readonly name: string;
  /** The runner leads (took the lease, or starts without one): forget what an earlier lead knew. */
  open(fence: Fence): Promise<void>;
  /**
   * Where the durable starts: the model's own committed position + 1, or undefined to start from
   * the durable's ack floor. Asked each time the durable is taken.
   */
  resumeFrom(): number | undefined;
  /**
   * The stored state of each job (aligned with `jobs`); undefined where it cannot be read now
   * (the runner tries again). May answer from a cache, or without a read for a job that is
   * surely new (its first event a fresh run.requested, and `retried` false).
   */
  load(jobs: readonly HeldJob<State>[]): Promise<readonly (State | undefined)[]>;
  /** Folds one event (stream sequence `seq`) onto the state; may return the same object. */
  fold(state: State, event: JobEvent, seq: number): State;
  /** Replaces the fold with the job's whole history (a heal); the stored part is kept. */
  replay(state: State, history: readonly HistoryEntry[]): State;
  /** The job needs no further event soon: write it without waiting for the linger. */
  settled(state: State): boolean;
  /**
   * The job may stay unwritten past the linger, up to {@link Pace.settleWaitMs} after its first
   * unwritten event, for the event that settles it: what it shows is read from elsewhere
   * meanwhile (the job view: GET reads a job without a view from the stream). Absent: never.
   */
  waitsToSettle?(state: State): boolean;
  /**
   * Writes the batch; per job, true when written (its messages are then acknowledged). A
   * rejection fails the whole batch; a {@link ProjectionFencedError} stops the runner.
   */
  write(batch: WriteBatch<State>, fence: Fence): Promise<readonly boolean[]>;
}

/** What one runner instance owns: its partition, its durable and its lease. */
export interface ProjectionSlot {
  /** 0 while the hub has one partition. */
  readonly partition: number;
  /** The partition's events stream (EventLayout.stream). */
  readonly stream: string;
  /** The durable consumer on the events stream. */
  readonly durable: string;
  /** Subjects the durable takes. */
  readonly filterSubject: string;
  /**
   * Active/standby: only the holder folds. Without one the runner folds unconditionally (a
   * rebuild, a test, a single-process hub).
   */
  readonly lease?: Lease;
}

/** Timing of a runner's rounds. */
export interface Pace {
  /** Largest group of messages folded in one round. */
  readonly maxBatch: number;
  /** How long a job's effect may wait for its next event before it is written anyway. */
  readonly lingerMs: number;
  /**
   * How long a job the model lets wait ({@link ReadModel.waitsToSettle}) may stay unwritten for
   * the event that settles it, from its first unwritten event; below `lingerMs` it is `lingerMs`.
   */
  readonly settleWaitMs?: number;
  /** Least time from one round's start to the next while the queue is not full. */
  readonly roundGapMs: number;
  /** The durable's ack wait. */
  readonly ackWaitMs: number;
  /** Write backoff: first and longest delay. */
  readonly backoffMs: { readonly first: number; readonly max: number };
}

/** Another writer owns the read model's store: this runner stops folding. */
export class ProjectionFencedError extends Error {
  readonly code = "projection_fenced";
  constructor(message: string) {
    super(message);
    this.name = "ProjectionFencedError";
  }
}
