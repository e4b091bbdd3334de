import type { JetStreamManager, JsMsg } from "@nats-io/jetstream";
import { PoisonMessageError, terminate } from "../bus/index.ts";
import { type EventLayout, readJobHistory } from "../jobs/index.ts";
import type { Logger } from "../log/index.ts";
import { AckFloor } from "./ack-floor.ts";
import { decodeDelivery } from "./decoded.ts";
import { HeldJobs } from "./held.ts";
import {
  type Fence,
  type HeldJob,
  type LoadedJob,
  type Pace,
  ProjectionFencedError,
  type ReadModel,
} from "./read-model.ts";

/** How long a holder whose lease is not held waits before it looks again. */
export const FENCED_PAUSE_MS = 50;

export interface RoundsDeps<State> {
  readonly jsm: JetStreamManager;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly logger: Logger;
  readonly model: ReadModel<State>;
  readonly pace: Pace;
  readonly durable: string;
  readonly fence: Fence;
  /**
   * This runner settles its messages (acks up to what it wrote, terminates poison). False for a
   * follower fed from another runner's durable (shared-feed.ts): the host settles them, and the
   * follower's position is the one committed with its rows.
   */
  readonly settles: () => boolean;
}

/**
 * The fold of one runner: held jobs, the ack floor and the rounds that load, fold and write due
 * jobs. The runner (runner.ts) feeds it deliveries and owns the durable and the lease.
 */
export function createRounds<State>(deps: RoundsDeps<State>) {
  const { logger, model, pace, durable, fence } = deps;
  const leading = fence.holding;
  const held = new HeldJobs<State>();
  let floor = new AckFloor();
  let applied = 0;
  let pending = 0;
  let retryDelayMs = 0;

  /** Adds a round's messages to the held jobs and returns the jobs it touched. */
  const take = (batch: JsMsg[]): Set<HeldJob<State>> => {
    const now = Date.now();
    const touched = new Set<HeldJob<State>>();
    for (const msg of batch) {
      floor.delivered(msg);
      pending = msg.info.pending;
      try {
        touched.add(held.add(msg, decodeDelivery(msg), now));
      } catch (err) {
        if (!(err instanceof PoisonMessageError)) throw err;
        const poison = { seq: msg.seq, subject: msg.subject, reason: err.message };
        if (deps.settles()) {
          logger.error(poison, "poison event terminated");
          terminate(msg);
        } else {
          // A follower: the host of its feed terminates it (and logs it as an error).
          logger.warn(poison, "poison event skipped");
        }
        floor.settled(msg);
      }
    }
    return touched;
  };

  /** Folds the job's not-yet-folded events onto its state. */
  const foldNew = (job: HeldJob<State>, state: State) => {
    let next = state;
    for (; job.folded < job.events.length; job.folded++) {
      const { msg, event } = job.events[job.folded] as HeldJob<State>["events"][number];
      next = model.fold(next, event, msg.seq);
    }
    job.state = next;
  };

  /**
   * Loads the jobs not loaded yet (a job whose read fails stays unloaded: the write phase reads
   * it again) and folds their new events. Heal jobs are left to the write phase.
   */
  const foldAll = async (jobs: Iterable<HeldJob<State>>) => {
    const toLoad: HeldJob<State>[] = [];
    for (const job of jobs) {
      if (job.heal) continue;
      if (job.state === undefined) toLoad.push(job);
      else foldNew(job, job.state);
    }
    if (toLoad.length === 0) return;
    const states = await model.load(toLoad);
    toLoad.forEach((job, i) => {
      const state = states[i];
      if (state !== undefined) foldNew(job, state);
    });
  };

  /** Folds a redelivered job again from its whole history (it came after newer events). */
  const heal = async (job: HeldJob<State>): Promise<boolean> => {
    const [state] = await model.load([job]);
    if (state === undefined) return false;
    const history = await readJobHistory(deps, { client_id: job.clientId, job_id: job.jobId });
    job.state = model.replay(state, history);
    job.folded = job.events.length;
    return true;
  };

  /** Makes every due job ready to write; returns those that are (the rest failed). */
  const ready = async (due: HeldJob<State>[]) => {
    // A read that fails leaves its jobs unloaded: they fail this round and are retried.
    await foldAll(due.filter((job) => !job.heal && job.state === undefined)).catch(
      (err: unknown) => {
        logger.warn({ durable, err: (err as Error).message }, `${model.name} read failed`);
      },
    );
    const healing = due.filter((job) => job.heal);
    const healed = new Set<HeldJob<State>>();
    if (healing.length > 0) {
      await Promise.all(
        healing.map((job) =>
          heal(job).then(
            (ok) => ok && healed.add(job),
            (err: unknown) =>
              logger.warn({ key: job.key, err: (err as Error).message }, "heal read failed"),
          ),
        ),
      );
    }
    return due.filter(
      (job): job is LoadedJob<State> => job.state !== undefined && (!job.heal || healed.has(job)),
    );
  };

  const failed = (job: HeldJob<State>) => {
    if (deps.settles()) for (const { msg } of job.events) msg.working();
    job.state = undefined;
    job.folded = 0;
    job.retried = true;
    held.retry(job);
  };

  /** Writes the due jobs; true when every one was written. */
  const writeDue = async (due: HeldJob<State>[]): Promise<boolean> => {
    const jobs = await ready(due);
    let written: readonly boolean[] = [];
    if (jobs.length > 0) {
      const batch = {
        jobs,
        pending,
        position: () =>
          floor.positionIf(new Set(jobs.flatMap((j) => j.events.map((e) => e.msg.seq)))),
      };
      try {
        written = await model.write(batch, fence);
      } catch (err) {
        if (err instanceof ProjectionFencedError) throw err;
        logger.error(
          { durable, err: (err as Error).message },
          `${model.name} write failed; retrying`,
        );
      }
    }
    let ok = jobs.length === due.length;
    jobs.forEach((job, i) => {
      if (written[i] !== true) return;
      for (const { msg } of job.events) {
        floor.settled(msg);
        applied = Math.max(applied, msg.seq);
      }
      held.written(job);
    });
    for (const job of due) {
      if (held.has(job)) {
        ok = false;
        failed(job);
      }
    }
    return ok;
  };

  /**
   * One round over `batch`; `all`: write every held job (stopping). True when writes failed at
   * the longest backoff.
   */
  const round = async (batch: JsMsg[], all: boolean) => {
    const touched = take(batch);
    try {
      await foldAll(touched);
    } catch (err) {
      // A read that failed (the store away): those jobs are read again next round.
      for (const job of touched) if (job.state === undefined) held.retry(job);
      throw err;
    }
    // Fenced: while the lease is not held, nothing is written or acknowledged and the work stays
    // held. A lease really lost stands this runner down (halt drops it all, the new holder
    // refolds from its position); a renewal that was only late lets the next round go on.
    if (!leading()) {
      await Bun.sleep(FENCED_PAUSE_MS);
      return false;
    }
    const due = held.due({
      now: Date.now(),
      lingerMs: pace.lingerMs,
      settleWaitMs: pace.settleWaitMs,
      touched,
      settled: model.settled,
      waitsToSettle: model.waitsToSettle,
      all,
    });
    const ok = due.length === 0 || (await writeDue(due));
    // Fenced again before acking: a holder paused during its writes wakes past its lease, and its
    // ack-all would reach the new holder's durable of the same name. Kept for the next flush.
    // A follower acks nothing: it only forgets what it wrote (the host acks its own durable).
    if (!deps.settles()) floor.flush();
    else if (leading()) floor.flush()?.ack();
    // A job whose write failed is retried before anything newer of it is written (it stays held,
    // so newer events join its group in order); back off while writes keep failing.
    const { first, max } = pace.backoffMs;
    retryDelayMs = ok ? 0 : Math.min(Math.max(retryDelayMs * 2, first), max);
    if (!ok) await Bun.sleep(retryDelayMs);
    return !ok && retryDelayMs >= max;
  };

  return {
    round,
    /** When the next held job is due by its linger or settle wait (undefined: none held). */
    nextDueAt: () => held.nextDueAt(pace),
    heldCount: () => held.size,
    /** The durable's pending count (num_pending) at the last delivery taken. */
    pending: () => pending,
    /** Drops every held job: what it held comes again from the durable. */
    drop: () => held.clear(),
    /** A recreated durable: a floor kept from before would wait for messages dropped with it. */
    restart: () => {
      held.clear();
      floor = new AckFloor();
    },
    appliedSeq: () => applied,
  };
}

export type Rounds = ReturnType<typeof createRounds>;
