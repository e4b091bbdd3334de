import type { Logger } from "../log/index.ts";

/** Work a read model does now and then whatever arrives (heartbeats, pruning). */
export interface HousekeepingTask {
  /** For logs. */
  readonly name: string;
  run(now: number): Promise<void>;
}

export interface Housekeeping {
  /** Runs `task` at every tick from now on; returns its removal. */
  add(task: HousekeepingTask): () => void;
  /** True while a tick is scheduled (some task is added). */
  armed(): boolean;
  /** Removes every task and waits for a tick in progress. */
  stop(): Promise<void>;
}

/** The timer functions the scheduler uses; tests may pass their own clock. */
export interface HousekeepingTimers {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
  now(): number;
}

const REAL_TIMERS: HousekeepingTimers = {
  set: (run, ms) => setTimeout(run, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  now: Date.now,
};

/**
 * One timer per process for the housekeeping of all its read models and partitions
 * (docs/architecture.md, "Projection runner"): an idle process wakes once per `everyMs`, not once
 * per partition. Every tick runs every task in turn (a failing task is logged, the others run);
 * the next tick is scheduled when one ends, so ticks never overlap. No task, no timer.
 */
export function createHousekeeping(deps: {
  readonly everyMs: number;
  readonly logger: Logger;
  readonly timers?: HousekeepingTimers;
}): Housekeeping {
  const timers = deps.timers ?? REAL_TIMERS;
  const tasks = new Set<HousekeepingTask>();
  let handle: unknown;
  let ticking = false;
  let running: Promise<void> = Promise.resolve();

  const tick = async () => {
    const now = timers.now();
    for (const task of [...tasks]) {
      try {
        await task.run(now);
      } catch (err) {
        deps.logger.warn({ task: task.name, err: (err as Error).message }, "housekeeping failed");
      }
    }
  };

  const arm = () => {
    if (handle !== undefined || ticking || tasks.size === 0) return;
    handle = timers.set(() => {
      handle = undefined;
      ticking = true;
      running = tick().finally(() => {
        ticking = false;
        arm();
      });
    }, deps.everyMs);
  };

  const disarm = () => {
    if (handle === undefined) return;
    timers.clear(handle);
    handle = undefined;
  };

  return {
    add(task) {
      tasks.add(task);
      arm();
      return () => {
        tasks.delete(task);
        if (tasks.size === 0) disarm();
      };
    },
    armed: () => handle !== undefined || ticking,
    async stop() {
      tasks.clear();
      disarm();
      await running;
    },
  };
}
