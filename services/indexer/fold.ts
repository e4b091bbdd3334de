import { parseIsoMs } from "../../shared/clock/index.ts";
import {
  isFinal,
  type JobEvent,
  type JobState,
  type JobView,
  transition,
} from "../../shared/domain/index.ts";
import type { CountDelta, IndexRow } from "../../shared/search/index.ts";

/** A job's row as the indexer folds it onto what is stored. */
export interface RowFold {
  /** The row as stored (null: none). */
  readonly stored: JobState;
  /** The fold of the events onto `stored`. */
  view: JobState;
  /** From the run.requested, when it was among the events. */
  tenant: string | undefined;
}

/** The principal tenant of a run's metadata, if it names one. */
export function tenantOf(event: JobEvent): string | undefined {
  if (event.type !== "run.requested") return undefined;
  const principal = (event.data.metadata as { principal?: { tenant?: unknown } } | undefined)
    ?.principal;
  return typeof principal?.tenant === "string" ? principal.tenant.slice(0, 256) : undefined;
}

/** Folds one event (stream sequence `seq`) onto the row. */
export function foldRow(row: RowFold, event: JobEvent, seq: number): RowFold {
  row.tenant = tenantOf(event) ?? row.tenant;
  if (row.view !== null && seq <= row.view.seq) return row;
  const result = transition(row.view, event);
  if (result.state !== null) row.view = { ...result.state, seq };
  return row;
}

const minuteOf = (iso: string | undefined): number =>
  Math.floor(parseIsoMs(iso ?? "") / 60_000) || 0;

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

/** The row to write, or undefined when its fold changed nothing. */
export function rowOf(row: RowFold): IndexRow | undefined {
  if (row.view === null) return undefined;
  if (row.stored !== null && row.stored.seq >= row.view.seq) return undefined;
  return { view: row.view, tenant: row.tenant };
}
