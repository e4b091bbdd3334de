import type { JsMsg } from "@nats-io/jetstream";
import type { JobEvent } from "../domain/index.ts";
import { jobViewKey } from "../jobs/index.ts";
import type { HeldJob } from "./read-model.ts";

/**
 * The jobs whose events were taken and whose effect is not written yet, in the order their first
 * unwritten event arrived (a Map keeps insertion order, and so `since`'s): the job whose linger
 * runs out first is always the first one.
 */
export class HeldJobs<State> {
  private readonly jobs = new Map<string, HeldJob<State>>();
  /** Jobs whose write failed: due again next round (after the backoff), not after the linger. */
  private readonly retrying = new Set<HeldJob<State>>();

  /** Adds an event to its job's group (starting the group on its first event); returns it. */
  add(msg: JsMsg, event: JobEvent, now: number): HeldJob<State> {
    const key = jobViewKey(event);
    let job = this.jobs.get(key);
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

  /** The held job whose linger runs out first. */
  oldest(): HeldJob<State> | undefined {
    return this.jobs.values().next().value;
  }

  /**
   * Jobs whose effect is written this round: touched ones that settled (or must heal), those
   * whose write failed, those whose linger ran out (a prefix, oldest first), or all of them when
   * `all` (stopping). Neither step walks every held job.
   */
  due(options: {
    readonly now: number;
    readonly lingerMs: number;
    readonly touched: ReadonlySet<HeldJob<State>>;
    readonly settled: (state: State) => boolean;
    readonly all: boolean;
  }): HeldJob<State>[] {
    if (options.all) return [...this.jobs.values()];
    const list = new Set<HeldJob<State>>();
    for (const job of this.retrying) if (this.has(job)) list.add(job);
    this.retrying.clear();
    for (const job of options.touched) {
      if (job.heal || (job.state !== undefined && options.settled(job.state))) list.add(job);
    }
    for (const job of this.jobs.values()) {
      if (options.now - job.since < options.lingerMs) break;
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
    this.jobs.delete(job.key);
  }

  /** The job is still held (not written since it was taken). */
  has(job: HeldJob<State>): boolean {
    return this.jobs.get(job.key) === job;
  }

  clear(): void {
    this.jobs.clear();
    this.retrying.clear();
  }

  get size(): number {
    return this.jobs.size;
  }
}
