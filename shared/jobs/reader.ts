import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { evolve, type JobState, type JobView } from "../domain/index.ts";
import { GenerationalMap } from "./generations.ts";
import type { EventLayout } from "./layout.ts";
import { readLastEvent } from "./read.ts";
import { readLastJobEvent } from "./status.ts";
import { type JobRef, jobViewKey } from "./subjects.ts";
import type { JobViewCache } from "./view-cache.ts";
import { jobViewCodec } from "./view-codec.ts";

export interface JobReader {
  /** The client's job, or null when the client has no such job. */
  get(ref: JobRef): Promise<JobView | null>;
  /** The view from the in-process cache only (no I/O); undefined when not cached. */
  cached?(ref: JobRef): JobView | undefined;
  /**
   * This process appended an event of the job at stream sequence `seq` (a cancel): until
   * the view has applied it, `get` folds the job from the stream instead of serving the older view.
   */
  appended(ref: JobRef, seq: number): void;
}

/** Appends remembered for read-your-writes; older ones drop out (their views caught up long ago). */
const APPENDS_REMEMBERED = 10_000;

/**
 * Reads the job view from KV, falling back to the event stream when the projector has not written
 * it yet. The fallback folds the job's last event of each kind through the same evolve: status
 * events on a job subject are appended with optimistic concurrency, so the last one is legal.
 */
export function createJobReader(deps: {
  /** The view bucket of the partition a job lives in (HubConnection.viewsOf). */
  readonly viewsOf: (ref: JobRef) => KV;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  /** Optional in-process cache of settled views (view-cache.ts); everything else reads KV. */
  readonly cache?: JobViewCache;
}): JobReader {
  const { cache } = deps;
  /** Jobs this process appended to, by view key: the sequence their view must reach. */
  const appends = new GenerationalMap<number>(APPENDS_REMEMBERED);
  /** Whether a view misses an append of this process (it is then read from the stream). */
  const behind = (key: string, view: JobView): boolean => {
    const seq = appends.get(key);
    if (seq === undefined) return false;
    if (view.seq >= seq) appends.delete(key);
    return view.seq < seq;
  };
  const fromStream = async (ref: JobRef): Promise<JobView | null> => {
    const run = await readLastEvent(deps, ref, "run");
    if (!run) return null;
    // A `.job` subject may end in a NATS worker's poison, which is read past as the projector
    // skips it.
    const [job, cb] = await Promise.all([
      readLastJobEvent(deps, ref),
      readLastEvent(deps, ref, "cb"),
    ]);
    let state: JobState = evolve(null, run.event);
    let seq = run.seq;
    for (const stored of [job, cb]) {
      if (!stored) continue;
      state = evolve(state, stored.event);
      seq = Math.max(seq, stored.seq);
    }
    return state ? { ...state, seq } : null;
  };

  return {
    async get(ref) {
      const key = jobViewKey(ref);
      const hit = cache?.get(key);
      if (hit && !behind(key, hit)) return hit;
      const entry = await deps.viewsOf(ref).get(key);
      if (entry && entry.operation === "PUT" && entry.length > 0) {
        const view = jobViewCodec.decode(entry.value);
        if (!behind(key, view)) {
          cache?.remember(key, entry.revision, view);
          return view;
        }
      }
      return fromStream(ref);
    },
    cached: (ref) => cache?.get(jobViewKey(ref)),
    appended(ref, seq) {
      const key = jobViewKey(ref);
      appends.set(key, Math.max(seq, appends.get(key) ?? 0));
    },
  };
}
