import type { JsMsg } from "@nats-io/jetstream";
import type { JobEvent } from "../domain/index.ts";
import { jobViewKey } from "../jobs/index.ts";
import type { HeldJob } from "./read-model.ts";

/** How long held jobs wait: their linger, and the longer wait of those that wait to settle. */
export interface HeldWait {
  readonly lingerMs: number;
  readonly settleWaitMs?: number;
}

const settleWaitOf = (wait: HeldWait) => Math.max(wait.lingerMs, wait.settleWaitMs ?? 0);

/**
 * The jobs whose events were taken and whose effect is not written yet, in the order their first
 * unwritten event arrived (a Map keeps insertion order, and so `since`'s): the job whose linger
 * runs out first is always the first one. A job whose linger ran out while the model lets it wait
 * for the event that settles it moves to a second map, in the same order (it moves in its
 * linger's order, and every such job waits the same time), so both walks stay prefixes.
 */
export class HeldJobs<State> {
  private readonly jobs = new Map<string, HeldJob<State>>();
  /** Jobs past their linger that wait to settle (ReadModel.waitsToSettle), up to settleWaitMs. */
  private readonly settling = new Map<string, HeldJob<State>>();
  /** Jobs whose write failed: due again next round (after the backoff), not after the linger. */
  private readonly retrying = new Set<HeldJob<State>>();

  /** Adds an event to its job's group (starting the group on its first event); returns it. */
  add(msg: JsMsg, event: JobEvent, now: number): HeldJob<State> {
    const key = jobViewKey(event);
    let job = this.jobs.get(key) ?? this.settling.get(key);
    if (job === undefined) {
      job = {
        key,
        clientId: event.client_id,
        jobId: event.job_id,
        events: [],
        since: now,
        heal: false,
        retried: false,
        state: undefined,
        folded: 0,
      };
      this.jobs.set(key, job);
    }
    job.events.push({ msg, event });
    if (msg.info.redelivered) job.heal = true;
    return job;
  }

  /** When the next held job is due by time (its linger or its settle wait); undefined: none. */
  nextDueAt(wait: HeldWait): number | undefined {
    const lingering = this.jobs.values().next().value;
    const settling = this.settling.values().next().value;
    const a = lingering === undefined ? Infinity : lingering.since + wait.lingerMs;
    const b = settling === undefined ? Infinity : settling.since + settleWaitOf(wait);
    const at = Math.min(a, b);
    return at === Infinity ? undefined : at;
  }

  /**
   * Jobs whose effect is written this round: touched ones that settled (or must heal), those
   * whose write failed, those whose linger ran out (a prefix, oldest first) unless they wait to
   * settle, those whose settle wait ran out, or all of them when `all` (stopping). No step walks
   * every held job.
   */
  due(
    options: HeldWait & {
      readonly now: number;
      readonly touched: ReadonlySet<HeldJob<State>>;
      readonly settled: (state: State) => boolean;
      /** The model lets the job wait to settle (ReadModel.waitsToSettle); absent: none does. */
      readonly waitsToSettle?: ((state: State) => boolean) | undefined;
      readonly all: boolean;
    },
  ): HeldJob<State>[] {
    if (options.all) return [...this.jobs.values(), ...this.settling.values()];
    const { now, waitsToSettle } = options;
    const list = new Set<HeldJob<State>>();
    for (const job of this.retrying) if (this.has(job)) list.add(job);
    this.retrying.clear();
    for (const job of options.touched) {
      if (job.heal || (job.state !== undefined && options.settled(job.state))) list.add(job);
    }
    const settleWaitMs = settleWaitOf(options);
    for (const job of this.jobs.values()) {
      if (now - job.since < options.lingerMs) break;
      const waits =
        waitsToSettle !== undefined &&
        !list.has(job) &&
        job.state !== undefined &&
        now - job.since < settleWaitMs &&
        waitsToSettle(job.state);
      if (waits) {
        this.jobs.delete(job.key);
        this.settling.set(job.key, job);
      } else list.add(job);
    }
    for (const job of this.settling.values()) {
      if (now - job.since < settleWaitMs) break;
      list.add(job);
    }
    return [...list];
  }

  /** The job's write failed: it is due again in the next round. */
  retry(job: HeldJob<State>): void {
    this.retrying.add(job);
  }

  /** The job's effect is written: it leaves the group. */
  written(job: HeldJob<State>): void {
    if (!this.jobs.delete(job.key)) this.settling.delete(job.key);
  }

  /** The job is still held (not written since it was taken). */
  has(job: HeldJob<State>): boolean {
    return (this.jobs.get(job.key) ?? this.settling.get(job.key)) === job;
  }

  clear(): void {
    this.jobs.clear();
    this.settling.clear();
    this.retrying.clear();
  }

  get size(): number {
    return this.jobs.size + this.settling.size;
  }
}
