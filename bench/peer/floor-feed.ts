/**
 * The feed floor's views fold: the hub's read-model JetStream work and nothing else. It takes
 * every event of every job from one durable (FLOOR_FEED, AckPolicy.All), as the hub's read models
 * take their shared feed, holds a job's view in memory until the job settles (its job.done when
 * it has no callback, else its callback.delivered), then puts the view once and acks, all at
 * once, every event up to the last one whose job is stored. Per job: three deliveries, one KV
 * write, an ack every few hundred events; the hub's view shows each status and the callback's
 * state from the same three events.
 *
 * As the hub's projector (`projector.settle_wait`), a job still unsettled after SETTLE_WAIT_MS is
 * written as it is, so a callback that is retried later cannot hold the ack floor, and the feed's
 * max_ack_pending, for its whole retry: its callback.delivered writes the view again.
 */
import type { JsMsg } from "@nats-io/jetstream";
import type { PeerJobView } from "./app.ts";
import type { FloorRun } from "./floor-common.ts";

/** The job.done header that carries the run's callback URL (the executor sets it). */
export const CALLBACK_HEADER = "Floor-Callback-Url";

/** At most this many events between two acks, and at most ACK_EVERY_MS between them. */
const ACK_BATCH = 250;
const ACK_EVERY_MS = 10;
const RETRY_MS = 1_000;
/** The hub's `projector.settle_wait` default. */
export const SETTLE_WAIT_MS = 400;

/** One delivery, and whether its job's view is stored (then it may be acked). */
interface Entry {
  readonly msg: JsMsg;
  stored: boolean;
}

type FeedView = PeerJobView & { callback?: { status: string; attempts: number } };

interface HeldJob {
  view: FeedView;
  readonly entries: Entry[];
  /** When its run.requested was taken (ms). */
  readonly since: number;
}

export interface FeedViewsDeps {
  /** Stores a job's view (the partition's KV bucket). */
  put(jobId: string, view: string): Promise<unknown>;
  /** The job id of an event subject. */
  jobIdOf(subject: string): string;
  /** Milliseconds now; default Date.now. */
  readonly now?: () => number;
}

export interface FeedViews {
  /** Folds one delivery; call with each, in order. */
  take(msg: JsMsg): void;
  /** Writes every job held past the settle wait as it is; call every SWEEP_EVERY_MS. */
  sweep(): void;
}

/** How often the caller sweeps for jobs held past the settle wait. */
export const SWEEP_EVERY_MS = SETTLE_WAIT_MS / 4;

/** A fold for one partition's feed. */
export function createFeedViews(deps: FeedViewsDeps): FeedViews {
  const now = deps.now ?? Date.now;
  /** Jobs whose view waits for them to settle, oldest first (Map keeps insertion order). */
  const held = new Map<string, HeldJob>();
  /** Views written before their job settled (at the settle wait), for the event that settles it. */
  const unsettled = new Map<string, FeedView>();
  const order: Entry[] = [];
  let head = 0;
  let sinceAck = 0;
  let last: JsMsg | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const ack = () => {
    timer = undefined;
    sinceAck = 0;
    last?.ack();
    last = undefined;
  };
  /** Moves past every stored entry at the head; acks in batches. */
  const advance = () => {
    while (head < order.length && (order[head] as Entry).stored) {
      last = (order[head] as Entry).msg;
      head++;
      sinceAck++;
    }
    if (head > 4_096) {
      order.splice(0, head);
      head = 0;
    }
    if (last === undefined) return;
    if (sinceAck >= ACK_BATCH) {
      if (timer !== undefined) clearTimeout(timer);
      ack();
    } else {
      timer ??= setTimeout(ack, ACK_EVERY_MS);
    }
  };
  const write = (jobId: string, job: HeldJob) => {
    held.delete(jobId);
    if (job.view.status === "queued" || job.view.callback?.status === "pending") {
      unsettled.set(jobId, job.view);
    } else {
      unsettled.delete(jobId);
    }
    deps.put(jobId, JSON.stringify(job.view)).then(
      () => {
        for (const e of job.entries) e.stored = true;
        advance();
      },
      () => setTimeout(() => write(jobId, job), RETRY_MS),
    );
  };

  /** A job's view with one more event folded in, written unless it waits to settle. */
  const fold = (jobId: string, entry: Entry, view: FeedView, settled: boolean) => {
    const before = held.get(jobId);
    const job: HeldJob = {
      view,
      entries: [...(before?.entries ?? []), entry],
      since: before?.since ?? now(),
    };
    if (settled) write(jobId, job);
    else held.set(jobId, job);
  };

  return {
    sweep() {
      const cutoff = now() - SETTLE_WAIT_MS;
      for (const [jobId, job] of held) {
        if (job.since > cutoff) break;
        write(jobId, job);
      }
    },
    take(msg) {
      const entry: Entry = { msg, stored: false };
      order.push(entry);
      const jobId = deps.jobIdOf(msg.subject);
      const kind = msg.subject.slice(0, msg.subject.lastIndexOf(".")).split(".").pop();
      if (kind === "run") {
        const { job_id, request_id, route, created_at } = msg.json<FloorRun>();
        fold(jobId, entry, { job_id, request_id, route, created_at, status: "queued" }, false);
        return;
      }
      if (kind === "done") {
        const pending = msg.headers?.get(CALLBACK_HEADER);
        const callback = pending ? { callback: { status: "pending", attempts: 0 } } : {};
        fold(jobId, entry, { ...msg.json<PeerJobView>(), ...callback }, !pending);
        return;
      }
      const { attempt } = msg.json<{ attempt: number }>();
      const view = held.get(jobId)?.view ?? unsettled.get(jobId);
      if (view === undefined) {
        // Its settled view is stored already (a redelivery): nothing to fold.
        entry.stored = true;
        advance();
        return;
      }
      fold(jobId, entry, { ...view, callback: { status: "delivered", attempts: attempt } }, true);
    },
  };
}
