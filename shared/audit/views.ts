import { type JobState, type JobView, transition } from "../domain/index.ts";

/** A field where the stored view and the replayed state disagree. */
export interface ViewDivergence {
  readonly job: string;
  readonly field: string;
  readonly view: unknown;
  readonly replayed: unknown;
}

const FIELDS: readonly (keyof JobView)[] = [
  "request_id",
  "route",
  "status",
  "created_at",
  "updated_at",
  "completed_at",
  "output",
  "error",
  "callback",
  "fingerprint",
  "retry_of",
  "retried_as",
];

/** Folds job events (stream order) with the projector's `transition`, keyed `<client>.<job>`. */
export class Replayer {
  readonly states = new Map<string, JobState>();

  apply(key: string, seq: number, event: Parameters<typeof transition>[1]): void {
    const current = this.states.get(key) ?? null;
    const result = transition(current, event);
    if (result.state !== null) this.states.set(key, { ...result.state, seq });
  }
}

/** Compares stored views with replayed states, field by field; a missing side is a divergence. */
export function compareViews(
  replayed: ReadonlyMap<string, JobState>,
  views: ReadonlyMap<string, unknown>,
): ViewDivergence[] {
  const out: ViewDivergence[] = [];
  const keys = [...new Set([...replayed.keys(), ...views.keys()])].sort();
  for (const job of keys) {
    const a = replayed.get(job) ?? null;
    const v = (views.get(job) ?? null) as Record<string, unknown> | null;
    if (a === null || v === null) {
      out.push({
        job,
        field: "(job)",
        view: v === null ? null : "present",
        replayed: a === null ? null : "present",
      });
      continue;
    }
    for (const field of FIELDS) {
      const left = v[field];
      const right = a[field];
      if (JSON.stringify(left) !== JSON.stringify(right)) {
        out.push({ job, field, view: left, replayed: right });
      }
    }
  }
  return out;
}
