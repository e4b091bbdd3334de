import type { JsMsg } from "@nats-io/jetstream";
import {
  type JobEvent,
  type JobState,
  type JobView,
  transition,
} from "../../shared/domain/index.ts";
import type { JobRef } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { completedBy, observeCompletion, type ProjectorMetrics } from "./observe.ts";
import type { StoredView, ViewStore } from "./view-store.ts";

/** The fold of a held job's events onto its stored view. */
interface Folded {
  /** The view the write is compare-and-set against. */
  readonly start: StoredView;
  /** `start` was assumed empty without a read (the group begins with the job's run.requested). */
  readonly guessed: boolean;
  state: JobState;
  changed: boolean;
  /** How many of the entry's events are folded into `state`. */
  count: number;
  /** The view as it became final in this fold, counted once it is written. */
  completed: JobView | undefined;
}

/** A job whose events were taken and whose view is not written yet. */
export interface Held {
  readonly key: string;
  /** The job (its first event here: an event names its job). */
  readonly ref: JobRef;
  /** Unwritten events, in arrival order, with the messages to settle once written. */
  readonly events: { readonly msg: JsMsg; readonly event: JobEvent }[];
  /** When the oldest unwritten event arrived. */
  readonly since: number;
  /** A redelivered message is among the events: the view is folded again from the stream. */
  heal: boolean;
  folded: Folded | undefined;
  /** A guessed-new key existed after all: read it from now on. */
  noGuess?: boolean;
}

export interface HeldDeps {
  readonly store: ViewStore;
  readonly logger: Logger;
  readonly metrics?: ProjectorMetrics;
}

/** True when two views hold the same values (their JSON, as stored, is equal). */
function sameView(a: JobView, b: JobView): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Folds the entry's not-yet-folded events onto its view (reading the view on first use). */
export async function foldHeld(entry: Held, deps: HeldDeps): Promise<void> {
  if (entry.heal) return;
  if (entry.folded === undefined) {
    const first = entry.events[0];
    // A group that starts with a fresh run.requested is a new job: kv.create proves the key is
    // new, so the read is skipped; if the key exists after all, the create fails and it is read.
    const guess =
      !entry.noGuess &&
      first?.event.type === "run.requested" &&
      !first.msg.redelivered &&
      !deps.store.cached(entry.key);
    const start = guess ? { view: null, revision: 0 } : await deps.store.load(entry.key);
    entry.folded = {
      start,
      guessed: guess,
      state: start.view,
      changed: false,
      count: 0,
      completed: undefined,
    };
  }
  const folded = entry.folded;
  for (; folded.count < entry.events.length; folded.count++) {
    const { msg, event } = entry.events[folded.count] as Held["events"][number];
    if (folded.state !== null && msg.seq <= folded.state.seq) continue;
    const result = transition(folded.state, event);
    if (!result.applied) {
      deps.logger.warn(
        {
          seq: msg.seq,
          job_id: event.job_id,
          client_id: event.client_id,
          type: event.type,
          reason: result.reason,
        },
        "event ignored for status",
      );
    }
    if (result.state !== null) {
      folded.completed ??= completedBy(folded.state, result.state);
      folded.state = { ...result.state, seq: msg.seq };
      folded.changed = true;
    }
  }
}

/**
 * A held job whose events include a redelivered message: after a crash, what the dead process
 * held comes back only after ack_wait, behind newer events of the same job. Folding in arrival
 * order would lose them (a job.done ahead of its run.requested is ignored as unknown_job), so the
 * view is folded again from the job's whole history and rewritten when it differs.
 */
async function heal(entry: Held, deps: HeldDeps): Promise<void> {
  const start = await deps.store.load(entry.key);
  const state = await deps.store.foldFromStream(entry.ref);
  // Compare contents, not only `seq`: a view can hold the newest seq and still miss an older
  // event that was redelivered late.
  if (state !== null && (start.view === null || !sameView(state, start.view))) {
    await deps.store.write(entry.key, start, state);
  }
}

/**
 * Writes a held job's view; true when its messages may be settled. A failed write (another writer
 * moved the key, NATS away) leaves the job held and its view to be read again.
 */
export async function writeHeld(entry: Held, deps: HeldDeps): Promise<boolean> {
  if (entry.heal) {
    await heal(entry, deps);
    return true;
  }
  await foldHeld(entry, deps);
  const folded = entry.folded;
  if (folded === undefined || !folded.changed || folded.state === null) return true;
  try {
    await deps.store.write(entry.key, folded.start, folded.state);
    if (folded.completed) observeCompletion(deps.metrics, folded.completed);
    return true;
  } catch (err) {
    entry.folded = undefined;
    if (!folded.guessed) {
      deps.logger.warn(
        { key: entry.key, err: (err as Error).message },
        "view write failed; retrying",
      );
      return false;
    }
    // A guessed-new key existed (a redelivered run.requested): read it and fold again.
    entry.noGuess = true;
    return writeHeld(entry, deps);
  }
}
