import {
  type JobEvent,
  type JobState,
  type JobView,
  transition,
} from "../../shared/domain/index.ts";
import { foldHistory, isSettledView } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HeldJob, ReadModel, WriteBatch } from "../../shared/projection/index.ts";
import { NO_TRACING, type Tracing } from "../../shared/telemetry/index.ts";
import { completedBy, observeCompletion, type ProjectorMetrics, tracedWrite } from "./observe.ts";
import type { StoredView, ViewStore } from "./view-store.ts";

/** A job's view as the projector folds it onto what is stored. */
export interface ViewFold {
  /** The view the write is compare-and-set against. */
  readonly start: StoredView;
  /** `start` was assumed empty without a read (the group begins with the job's run.requested). */
  readonly guessed: boolean;
  view: JobState;
  /** The fold differs from `start`: there is something to write. */
  changed: boolean;
  /** The view as it became final in this fold, counted once it is written. */
  completed: JobView | undefined;
}

export type HeldView = HeldJob<ViewFold>;

/** True when two views hold the same values (their JSON, as stored, is equal). */
function sameView(a: JobView, b: JobView): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const fresh = (start: StoredView, guessed: boolean): ViewFold => ({
  start,
  guessed,
  view: start.view,
  changed: false,
  completed: undefined,
});

/**
 * The job view as a read model: KV `sy_jobs`, one key per job, folded with the same `transition`
 * as audit verify. Writes are compare-and-set on the KV revision, and the view's `seq` makes
 * re-application after redelivery a no-op.
 */
export function createViewModel(deps: {
  readonly store: ViewStore;
  readonly logger: Logger;
  readonly metrics?: ProjectorMetrics;
  readonly tracing?: Tracing;
}): ReadModel<ViewFold> {
  const { store, logger } = deps;
  const tracing = deps.tracing ?? NO_TRACING;

  const fold = (state: ViewFold, event: JobEvent, seq: number): ViewFold => {
    if (state.view !== null && seq <= state.view.seq) return state;
    const result = transition(state.view, event);
    if (!result.applied) {
      logger.warn(
        {
          seq,
          job_id: event.job_id,
          client_id: event.client_id,
          type: event.type,
          reason: result.reason,
        },
        "event ignored for status",
      );
    }
    if (result.state !== null) {
      state.completed ??= completedBy(state.view, result.state);
      state.view = { ...result.state, seq };
      state.changed = true;
    }
    return state;
  };

  /**
   * A group that starts with a fresh run.requested is a new job: kv.create proves the key is
   * new, so the read is skipped; if the key exists after all, the create fails and it is read.
   */
  const loadOne = async (job: HeldView): Promise<ViewFold | undefined> => {
    const first = job.events[0];
    const guess =
      !job.retried &&
      !job.heal &&
      first?.event.type === "run.requested" &&
      !first.msg.redelivered &&
      !store.cached(job.key);
    if (guess) return fresh({ view: null, revision: 0 }, true);
    try {
      return fresh(await store.load(job.key), false);
    } catch (err) {
      // A view that cannot be read now (a request timed out, NATS away) stays unloaded: the
      // runner reads it again before its write, under the write's own retry.
      logger.warn({ key: job.key, err: (err as Error).message }, "view read failed; retrying");
      return undefined;
    }
  };

  /** Writes a job's view; true when its messages may be settled. */
  const writeOne = async (job: HeldView, state: ViewFold): Promise<boolean> => {
    if (!state.changed || state.view === null) return true;
    try {
      await store.write(job.key, state.start, state.view);
      if (state.completed) observeCompletion(deps.metrics, state.completed);
      return true;
    } catch (err) {
      if (!state.guessed) {
        logger.warn({ key: job.key, err: (err as Error).message }, "view write failed; retrying");
        return false;
      }
      // A guessed-new key existed (a redelivered run.requested): read it and fold again.
      let again = fresh(await store.load(job.key), false);
      for (const { msg, event } of job.events) again = fold(again, event, msg.seq);
      job.state = again;
      return writeOne(job, again);
    }
  };

  return {
    name: "projector",
    async open() {},
    resumeFrom: () => undefined,
    load: (jobs) => Promise.all(jobs.map(loadOne)),
    fold,
    /**
     * After a crash, what the dead process held comes back only after ack_wait, behind newer
     * events of the same job: the view is folded from the job's whole history and rewritten when
     * its contents differ (a view can hold the newest seq and still miss an older event).
     */
    replay(state, history) {
      const view = foldHistory(history);
      const start = state.start;
      const changed = view !== null && (start.view === null || !sameView(view, start.view));
      return { start, guessed: false, view, changed, completed: undefined };
    },
    settled: (state) => state.view !== null && isSettledView(state.view),
    /**
     * A job with no view yet waits past the linger, to `projector.settle_wait`, for the event
     * that settles it (a callback slower than the linger, an executor slower than it): one KV
     * write instead of two, while GET reads the job from the stream, current. A job with a view is
     * written at its linger, or GET would serve its older status for longer.
     */
    waitsToSettle: (state) => state.start.view === null,
    write(batch: WriteBatch<ViewFold>) {
      return Promise.all(
        batch.jobs.map((job) =>
          tracedWrite(tracing, job, () => writeOne(job, job.state)).catch((err: unknown) => {
            store.forget(job.key);
            logger.error(
              { key: job.key, err: (err as Error).message },
              "projection failed; retrying",
            );
            return false;
          }),
        ),
      );
    },
  };
}
