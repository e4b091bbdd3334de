import type { JsMsg } from "@nats-io/jetstream";
import {
  isFinal,
  type JobEvent,
  type JobState,
  type JobView,
  transition,
} from "../../shared/domain/index.ts";
import type { CountDelta, IndexRow } from "../../shared/search/index.ts";

/** A job whose events were taken and whose row is not written yet. */
export interface HeldJob {
  readonly key: string;
  readonly clientId: string;
  readonly jobId: string;
  readonly events: { readonly msg: JsMsg; readonly event: JobEvent }[];
  /** When the oldest unwritten event arrived. */
  readonly since: number;
  /** A redelivered message is among them: fold the job again from the stream. */
  heal: boolean;
  /** The row as stored (null: none), once known. */
  stored: JobState | undefined;
  /** The fold of the events onto `stored`. */
  state: JobState;
  /** From the run.requested, when it is among the events. */
  tenant: string | undefined;
  /** How many of `events` are folded into `state`. */
  folded: number;
}

/** The principal tenant of a run's metadata, if it names one. */
export function tenantOf(event: JobEvent): string | undefined {
  if (event.type !== "run.requested") return undefined;
  const principal = (event.data.metadata as { principal?: { tenant?: unknown } } | undefined)
    ?.principal;
  return typeof principal?.tenant === "string" ? principal.tenant.slice(0, 256) : undefined;
}

/** Folds the held job's new events onto its state (the stored row must be known). */
export function foldNew(job: HeldJob): void {
  for (; job.folded < job.events.length; job.folded++) {
    const { msg, event } = job.events[job.folded] as HeldJob["events"][number];
    job.tenant = tenantOf(event) ?? job.tenant;
    if (job.state !== null && msg.seq <= job.state.seq) continue;
    const result = transition(job.state, event);
    if (result.state !== null) job.state = { ...result.state, seq: msg.seq };
  }
}

const minuteOf = (iso: string | undefined): number =>
  Math.floor(Date.parse(iso ?? "") / 60_000) || 0;

/** Adds a count change, summing with an earlier one of the same key this round. */
export function addCount(into: Map<string, CountDelta>, delta: CountDelta): void {
  const key = `${delta.kind}|${delta.minute}|${delta.clientId}|${delta.route}|${delta.status}`;
  const earlier = into.get(key);
  into.set(key, earlier ? { ...earlier, delta: earlier.delta + delta.delta } : delta);
}

/**
 * What writing `next` over `stored` changes in the counts: jobs by creation minute and current
 * status, final statuses by completion minute, settled callbacks by their last attempt's minute.
 */
export function countChanges(stored: JobState, next: JobView, into: Map<string, CountDelta>): void {
  const base = { clientId: next.client_id, route: next.route };
  const created = minuteOf(next.created_at);
  if (stored === null || stored.status !== next.status) {
    if (stored !== null) {
      addCount(into, {
        ...base,
        kind: "created",
        minute: created,
        status: stored.status,
        delta: -1,
      });
    }
    addCount(into, { ...base, kind: "created", minute: created, status: next.status, delta: 1 });
  }
  if (isFinal(next.status) && (stored === null || !isFinal(stored.status))) {
    const minute = minuteOf(next.completed_at ?? next.updated_at);
    addCount(into, { ...base, kind: "completed", minute, status: next.status, delta: 1 });
  }
  const settled = next.callback?.status;
  if ((settled === "delivered" || settled === "failed") && stored?.callback?.status !== settled) {
    const minute = minuteOf(next.callback?.last_attempt_at ?? next.updated_at);
    addCount(into, { ...base, kind: "callback", minute, status: settled, delta: 1 });
  }
}

/** The row to write for a held job, or undefined when its fold changed nothing. */
export function rowOf(job: HeldJob): IndexRow | undefined {
  if (job.state === null) return undefined;
  if (job.stored != null && job.stored.seq >= job.state.seq) return undefined;
  return { view: job.state, tenant: job.tenant };
}
