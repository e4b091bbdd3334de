import type {
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import {
  decodeEvent,
  ensureDurable,
  jobViewKey,
  PoisonMessageError,
  subjectFilters,
  TOPOLOGY,
} from "../../shared/bus/index.ts";
import { type JobState, type JobView, transition } from "../../shared/domain/index.ts";
import { GenerationalMap, isSettledView } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";

export interface ProjectorDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly kv: KV;
  readonly logger: Logger;
  /** Largest group of messages folded into one round of view writes. */
  readonly maxBatch?: number;
  /** Durable name; a rebuild uses a temporary one. */
  readonly durable?: string;
}

export interface Projector {
  start(): Promise<void>;
  /** Stops pulling, finishes the batch in hand, acks it. */
  stop(): Promise<void>;
  /** Highest stream sequence whose effect is in KV. */
  appliedSeq(): number;
}

interface Cached {
  view: JobView | null;
  revision: number;
}

const encoder = new TextEncoder();

/** True when two views hold the same values (their JSON, as stored, is equal). */
function sameView(a: JobView, b: JobView): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
const decoder = new TextDecoder();
const CACHE_LIMIT = 20_000;

/**
 * Folds every job event into the KV job view with the same `transition` as audit verify. Messages
 * are taken in micro-batches: while one round of KV writes is in flight, newly arrived messages
 * queue, and the next round folds them per job and writes each job once (coalesced writes). Writes
 * are compare-and-set on the KV revision, so a second writer cannot be overwritten blindly, and
 * the `seq` in the view makes re-application after redelivery a no-op. Run one projector replica:
 * JetStream spreads a durable's messages over replicas, which would break per-job ordering.
 */
export function createProjector(deps: ProjectorDeps): Projector {
  const { logger } = deps;
  const durable = deps.durable ?? TOPOLOGY.consumers.projector;
  // 250, not 1000: the same throughput (a round still holds tens of ms of events at full load)
  // with a quarter of the KV writes in flight, and a lower peak RSS (docs/performance.md).
  const maxBatch = deps.maxBatch ?? 250;
  const cache = new GenerationalMap<Cached>(CACHE_LIMIT);
  let messages: ConsumerMessages | undefined;
  let queue: JsMsg[] = [];
  let wake: (() => void) | undefined;
  /** Resolves the consumer pump's wait when the loop has taken a batch off a full queue. */
  let space: (() => void) | undefined;
  const maxQueued = maxBatch * 4;
  let running = false;
  let applied = 0;
  let loopDone: Promise<void> = Promise.resolve();

  /**
   * The job's view and KV revision. `fresh`: the group starts with the job's run.requested, so the
   * key almost surely does not exist yet; skip the read and let kv.create (compare-and-set on "no
   * key") prove it. If it does exist (a redelivery), the create fails and the group is re-read.
   */
  const load = async (key: string, fresh: boolean): Promise<Cached & { guessed?: boolean }> => {
    const hit = cache.get(key);
    if (hit) return hit;
    if (fresh) return { view: null, revision: 0, guessed: true };
    const entry = await deps.kv.get(key);
    if (entry?.operation !== "PUT" || entry.length === 0) {
      return { view: null, revision: entry?.revision ?? 0 };
    }
    return { view: JSON.parse(decoder.decode(entry.value)) as JobView, revision: entry.revision };
  };

  /**
   * The job's view folded from its whole history in the stream (read from the stream leader),
   * exactly as a replay would fold it. `subjectPrefix` is `sy.evt.<client>.<job>`.
   */
  const foldFromStream = async (subjectPrefix: string): Promise<JobState> => {
    let state: JobState = null;
    let seq = 1;
    for (;;) {
      // A leader read (not a direct get, which a follower may answer stale). nats.js types the
      // request as seq or last_by_subj only; the server (2.9+) also takes next_by_subj.
      const query = { seq, next_by_subj: `${subjectPrefix}.*` };
      const msg = await deps.jsm.streams.getMessage(TOPOLOGY.eventsStream, query);
      if (msg === null) return state;
      seq = msg.seq + 1;
      let event: ReturnType<typeof decodeEvent>;
      try {
        event = decodeEvent(msg.data);
      } catch (err) {
        if (!(err instanceof PoisonMessageError)) throw err;
        continue;
      }
      const result = transition(state, event);
      if (result.state !== null) state = { ...result.state, seq: msg.seq };
    }
  };

  /**
   * Compare-and-set write of a view: create when the key is new (revision 0), else update at the
   * revision it was read at. False when another writer moved the key or NATS is away; the cache
   * entry is dropped so the retry reads KV again.
   */
  const writeView = async (key: string, revision: number, view: JobView, warn = true) => {
    const bytes = encoder.encode(JSON.stringify(view));
    try {
      const next =
        revision === 0
          ? await deps.kv.create(key, bytes)
          : await deps.kv.update(key, bytes, revision);
      // A settled view (final, no callback pending) expects no more events but an operator's
      // rare redelivery request: it leaves the cache to the jobs still in flight.
      if (isSettledView(view)) cache.delete(key);
      else cache.set(key, { view, revision: next });
      return true;
    } catch (err) {
      cache.delete(key);
      if (warn) logger.warn({ key, err: (err as Error).message }, "view write failed; retrying");
      return false;
    }
  };

  /**
   * A group holding a redelivered message: after a crash (or an ack timeout) the messages the
   * dead process held come back only after ack_wait, behind newer events of the same jobs.
   * Folding in arrival order would lose them for good: a job.done that arrived before its
   * redelivered run.requested is ignored as unknown_job, and an older event behind a newer seq is
   * skipped. So such a job's view is folded again from its history in the stream.
   */
  const applyFromStream = async (key: string, msgs: JsMsg[]): Promise<boolean> => {
    const start = await load(key, false);
    const subject = msgs[0]?.subject ?? "";
    const state = await foldFromStream(subject.slice(0, subject.lastIndexOf(".")));
    // The fold from the stream is authoritative. Compare contents, not only `seq`: a view can hold
    // the newest seq and still miss an older event that was redelivered late (a callback event
    // applied on top of "queued" while the job.done was still held by the killed process).
    if (state !== null && (start.view === null || !sameView(state, start.view))) {
      if (!(await writeView(key, start.revision, state))) return false;
    }
    for (const msg of msgs) {
      msg.ack();
      applied = Math.max(applied, msg.seq);
    }
    return true;
  };

  /** Folds one job's messages into its view and writes it; false when the write must be retried. */
  const applyGroup = async (key: string, msgs: JsMsg[], guess = true): Promise<boolean> => {
    if (msgs.some((msg) => msg.redelivered)) return applyFromStream(key, msgs);
    const start = await load(key, guess && msgs[0]?.subject.endsWith(".run") === true);
    let state: JobState = start.view;
    let changed = false;
    const settled: JsMsg[] = [];
    for (const msg of msgs) {
      let event: ReturnType<typeof decodeEvent>;
      try {
        event = decodeEvent(msg.data);
      } catch (err) {
        if (!(err instanceof PoisonMessageError)) throw err;
        logger.error(
          { seq: msg.seq, subject: msg.subject, reason: err.message },
          "poison event terminated",
        );
        msg.term(err.message);
        continue;
      }
      if (state !== null && msg.seq <= state.seq) {
        settled.push(msg);
        continue;
      }
      const result = transition(state, event);
      if (!result.applied) {
        logger.warn(
          {
            seq: msg.seq,
            job_id: event.job_id,
            client_id: event.client_id,
            type: event.type,
            reason: result.reason,
          },
          "event ignored for status",
        );
      }
      if (result.state !== null) {
        state = { ...result.state, seq: msg.seq };
        changed = true;
      }
      settled.push(msg);
    }
    if (
      changed &&
      state !== null &&
      !(await writeView(key, start.revision, state, !start.guessed))
    ) {
      // A guessed-new key existed after all (a redelivered run.requested): read it and fold again.
      return start.guessed ? applyGroup(key, msgs, false) : false;
    }
    for (const msg of settled) {
      msg.ack();
      applied = Math.max(applied, msg.seq);
    }
    return true;
  };

  /**
   * Applies a batch; a job whose write fails is retried before anything newer is taken, so each
   * job's events are applied strictly in stream order. The messages are kept alive meanwhile.
   */
  const applyBatch = async (batch: JsMsg[]) => {
    let groups = new Map<string, JsMsg[]>();
    for (const msg of batch) {
      // sy.evt.<client>.<job>.<kind>
      const parts = msg.subject.split(".");
      const key = jobViewKey(parts[2] ?? "", parts[3] ?? "");
      const group = groups.get(key);
      if (group) group.push(msg);
      else groups.set(key, [msg]);
    }
    let delayMs = 50;
    while (groups.size > 0) {
      const results = await Promise.all(
        [...groups].map(async ([key, msgs]) => {
          const ok = await applyGroup(key, msgs).catch((err: unknown) => {
            cache.delete(key);
            logger.error({ key, err: (err as Error).message }, "projection failed; retrying");
            return false;
          });
          return [key, msgs, ok] as const;
        }),
      );
      groups = new Map(results.filter(([, , ok]) => !ok).map(([key, msgs]) => [key, msgs]));
      if (groups.size === 0) break;
      for (const msgs of groups.values()) for (const msg of msgs) msg.working();
      await Bun.sleep(delayMs);
      delayMs = Math.min(delayMs * 2, 2_000);
    }
  };

  const loop = async () => {
    while (running || queue.length > 0) {
      if (queue.length === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
        continue;
      }
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      space?.();
      await applyBatch(batch);
    }
  };

  return {
    async start() {
      await ensureDurable(deps.jsm, {
        name: durable,
        filterSubject: subjectFilters.all,
        // Short: what a killed projector held comes back (and heals views) within seconds. A batch
        // that is slow to write calls working() while it retries.
        ackWaitMs: 10_000,
        maxAckPending: 20_000,
      });
      const consumer = await deps.js.consumers.get(TOPOLOGY.eventsStream, durable);
      messages = await consumer.consume({ max_messages: 2000 });
      running = true;
      loopDone = loop();
      void (async () => {
        for await (const msg of messages as ConsumerMessages) {
          queue.push(msg);
          wake?.();
          // Backpressure: while the queue is full, stop taking from the consumer, so nats.js stops
          // pulling. Unbounded, the queue held 16k messages behind a burst (the projector's RSS
          // peak), each one's ack wait running.
          while (queue.length >= maxQueued && running) {
            await new Promise<void>((resolve) => {
              space = resolve;
            });
            space = undefined;
          }
        }
      })();
      logger.info({ durable }, "projector started");
    },
    async stop() {
      running = false;
      space?.();
      await messages?.close();
      wake?.();
      await loopDone;
    },
    appliedSeq: () => applied,
  };
}
