import type { JsMsg } from "@nats-io/jetstream";
import type { BacklogCollector } from "./backlog-collector.ts";
import { type RoundPacer, sharedRoundGapMs } from "./pacer.ts";
import { ProjectionFencedError } from "./read-model.ts";
import { createRounds, type RoundsDeps } from "./rounds.ts";

/** The rounds' deps (the lane sets `settles` at each start), and how the lane meets its runner. */
export interface LaneDeps<State> extends Omit<RoundsDeps<State>, "settles"> {
  readonly pacer?: RoundPacer;
  /** Told each round's backlog: the process collects while a lane catches up. */
  readonly backlog?: BacklogCollector;
  /** Called when the lane takes messages off its queue (a pump waiting for room goes on). */
  readonly roomMade: () => void;
  /** Another writer owns the model's store: the lane has stopped and dropped what it held. */
  readonly fenced: (err: ProjectionFencedError) => void;
}

/**
 * One read model's fold of one partition's deliveries: its queue, its rounds (held jobs, ack
 * floor, writes) and the loop that runs them. Where the deliveries come from (a durable of its
 * own, or a feed shared with another read model: shared-feed.ts) is the runner's.
 */
export function createLane<State>(deps: LaneDeps<State>) {
  const { logger, model, pace } = deps;
  const log = { durable: deps.durable, partition: deps.fence.partition };
  let settles = true;
  const rounds = createRounds({ ...deps, settles: () => settles });
  let queue: JsMsg[] = [];
  let wake: (() => void) | undefined;
  let running = false;
  let loopDone: Promise<void> = Promise.resolve();
  let leavePacer: (() => void) | undefined;
  /** Called after each round that leaves the queue empty (a follower looks whether it caught up). */
  let drained: (() => void) | undefined;

  /**
   * Waits for new messages or for the next held job's linger (or settle wait). Holding nothing
   * it sets no timer: an idle partition costs no wake-up of its own (housekeeping is one
   * process-wide timer, housekeeping.ts).
   */
  const idle = async () => {
    if (queue.length > 0) return;
    const dueAt = rounds.nextDueAt();
    await new Promise<void>((resolve) => {
      wake = resolve;
      if (dueAt !== undefined) setTimeout(resolve, Math.max(0, dueAt - Date.now()));
    });
    wake = undefined;
  };

  const heldJobDue = () => {
    const dueAt = rounds.nextDueAt();
    return dueAt !== undefined && Date.now() >= dueAt;
  };

  /** One step of the loop: waiting while idle, else a round. */
  const step = async (roundStartedAt: number): Promise<{ round: boolean; giveUp: boolean }> => {
    if (queue.length === 0 && running) {
      if (!heldJobDue()) {
        await idle();
        return { round: false, giveUp: false };
      }
    }
    const sinceLastRound = Date.now() - roundStartedAt;
    const gapMs = sharedRoundGapMs(deps.pacer, { baseMs: pace.roundGapMs, capMs: pace.lingerMs });
    if (running && queue.length < pace.maxBatch && sinceLastRound < gapMs) {
      await Bun.sleep(gapMs - sinceLastRound);
    }
    const batch = queue.slice(0, pace.maxBatch);
    queue = queue.slice(batch.length);
    deps.roomMade();
    const exhausted = await rounds.round(batch, !running);
    deps.backlog?.roundDone(rounds.pending());
    if (queue.length === 0 && running) drained?.();
    return { round: true, giveUp: exhausted && !running };
  };

  const loop = async () => {
    let failures = 0;
    let roundStartedAt = Number.NEGATIVE_INFINITY;
    while (running || queue.length > 0 || rounds.heldCount() > 0) {
      try {
        const startedAt = Date.now();
        const { round, giveUp } = await step(roundStartedAt);
        if (round) roundStartedAt = startedAt;
        // Stopping while writes keep failing: what is unwritten is un-acked and comes again.
        if (giveUp) break;
        failures = 0;
      } catch (err) {
        if (err instanceof ProjectionFencedError) {
          running = false;
          queue = [];
          rounds.drop();
          deps.fenced(err);
          break;
        }
        // Whatever a round throws, the loop goes on (held work stays held, nothing is acked);
        // a loop that ended left the process holding the lease and folding nothing.
        failures++;
        logger.error(
          { ...log, err: (err as Error).message },
          `${model.name} round failed; retrying`,
        );
        if (!running && failures >= 6) break;
        await Bun.sleep(Math.min(50 * 2 ** failures, 2_000));
      }
    }
  };

  return {
    /**
     * Starts folding a fresh durable's deliveries (what an earlier start held is dropped).
     * `settles`: false for a follower on another runner's durable (rounds.ts).
     */
    start(options: { readonly settles: boolean; readonly drained?: () => void }) {
      settles = options.settles;
      drained = options.drained;
      rounds.restart();
      queue = [];
      running = true;
      leavePacer?.();
      leavePacer = deps.pacer?.join();
      loopDone = loop();
    },
    /**
     * Stops folding. `flush`: write every held job first (a graceful stop). Without it nothing more
     * is written: what it held comes again from the durable (or from the model's position).
     */
    async halt(flush: boolean) {
      if (!flush) {
        queue = [];
        rounds.drop();
      }
      running = false;
      leavePacer?.();
      leavePacer = undefined;
      wake?.();
      await loopDone;
    },
    push(msg: JsMsg) {
      queue.push(msg);
      wake?.();
    },
    queued: () => queue.length,
    running: () => running,
    /** The durable's pending count (num_pending) at the last delivery taken. */
    pending: rounds.pending,
    appliedSeq: rounds.appliedSeq,
  };
}

export type Lane = ReturnType<typeof createLane>;
