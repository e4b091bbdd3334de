import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import {
  decodeEvent,
  isJsError,
  markStoreVersion,
  readStoreVersion,
  readStream,
  STORE_VERSION,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import { type Config, parseDuration } from "../../shared/config/index.ts";
import type { DispatchIndex } from "../../shared/dispatch/index.ts";
import {
  type DeliveryTrigger,
  decideCallbackStep,
  isFinal,
  type RunRequested,
} from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import {
  type EventLayout,
  readLastEvent,
  readStatus,
  statusAfterWrite,
  writeStatus,
} from "../../shared/jobs/index.ts";
import { createProgress, type ProgressSink } from "../../shared/progress/index.ts";
import {
  ensureDeadlineConsumer,
  ensureScheduleStreams,
  publishCallbackWakeup,
  publishDeadlineTimer,
} from "../../shared/schedule/index.ts";

/** Consumers of store version 1 that version 2 replaced. */
export const V1_WATCHDOG = "watchdog";
export const V1_REDELIVERY = "callback-redelivery";
/** Deadline of a job whose route is gone from the config (the schema's default). */
const DEFAULT_DEADLINE_MS = 15 * 60_000;

export interface MigrationDeps {
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly jsm: JetStreamManager;
  readonly meta: KV;
  readonly dispatch: DispatchIndex;
  readonly config: Config;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** A TTY gets progress lines; anything else nothing. */
  readonly progress: ProgressSink;
}

export interface MigrationReport {
  readonly from: number | "fresh";
  readonly to: number;
  /** Open jobs handed to NATS workers or HTTP executors that got a deadline timer. */
  readonly deadlineTimers: number;
  /** HTTP attempts that 0.1 left in flight, recorded as failed so the new dispatcher resends. */
  readonly resumedHttpAttempts: number;
  /** Unserved redelivery requests, now waiting in the callback queue. */
  readonly callbackWakeups: number;
  readonly removedConsumers: readonly string[];
}

/** Where a v1 consumer stood: everything after its ack floor may still be open. */
async function floorOf(deps: MigrationDeps, durable: string): Promise<number | undefined> {
  try {
    const info = await deps.jsm.consumers.info(deps.layout.stream(0), durable);
    return info.ack_floor.stream_seq + 1;
  } catch (err) {
    if (isJsError(err, "consumerNotFound")) return undefined;
    throw err;
  }
}

/**
 * Open jobs of asynchronous executors get the deadline timer 0.2 keeps in SWITCHYARD_DEADLINES
 * (0.1's watchdog consumer held their run.requested instead). Builtin jobs need nothing: their
 * run.requested is still un-acked in the executor consumer. An HTTP attempt 0.1 recorded as
 * dispatched but never saw answered (no 202 in the dispatch record) is recorded as failed, so the
 * route's dispatcher sends the next attempt instead of waiting for a report that cannot come.
 */
async function carryDeadlines(deps: MigrationDeps) {
  let timers = 0;
  let resumed = 0;
  const lengths = new Set<number>();
  const fromSeq = (await floorOf(deps, V1_WATCHDOG)) ?? 1;
  const progress = createProgress({ label: "open jobs checked", sink: deps.progress });
  for await (const record of readStream(deps.js, {
    filterSubject: deps.layout.filters.kind(0, "run"),
    fromSeq,
  })) {
    progress.tick();
    const run = decodeEvent(record.data) as RunRequested;
    let current = await readStatus(deps, run);
    if (isFinal(current.status)) continue;
    const route = deps.config.routes.find((r) => r.key === run.data.route);
    const kind = route?.executor.kind;
    if (kind === "builtin") continue;
    const last = current.last?.event;
    if (kind === "http" && last?.type === "job.dispatched" && last.data.target === "http") {
      const record = await deps.dispatch.get(run.job_id);
      if (record?.phase !== "accepted") {
        const failed = await writeStatus(deps, {
          ref: run,
          known: current,
          intent: {
            type: "job.attempt_failed",
            data: {
              target: "http",
              attempt: last.data.attempt,
              reason: "interrupted_by_upgrade",
              next_attempt_at: deps.clock.now().toISOString(),
            },
          },
        });
        current = statusAfterWrite(failed);
        resumed++;
      }
    }
    const deadlineMs = route ? parseDuration(route.deadline) : DEFAULT_DEADLINE_MS;
    if (!lengths.has(deadlineMs)) {
      await ensureDeadlineConsumer(deps.jsm, deadlineMs);
      lengths.add(deadlineMs);
    }
    await publishDeadlineTimer(
      deps.js,
      {
        client_id: run.client_id,
        job_id: run.job_id,
        route: run.data.route,
        created_at: run.occurred_at,
        due_at: new Date(Date.parse(run.occurred_at) + deadlineMs).toISOString(),
        expected_seq: current.seq,
      },
      { deadlineMs },
    );
    timers++;
  }
  progress.done();
  return { timers, resumed };
}

/** Puts a wake-up in the callback queue when the `.cb` log says the delivery is not settled. */
async function wakeIfOpen(
  deps: MigrationDeps,
  input: { clientId: string; jobId: string; finalSeq: number; trigger: DeliveryTrigger },
): Promise<boolean> {
  const last = await readLastEvent(deps, { client_id: input.clientId, job_id: input.jobId }, "cb");
  const now = deps.clock.now().getTime();
  const step = decideCallbackStep(input.trigger, last, now);
  if (step.kind !== "attempt" && step.kind !== "wait" && step.kind !== "finish") return false;
  await publishCallbackWakeup(deps.js, {
    client_id: input.clientId,
    job_id: input.jobId,
    final_seq: input.finalSeq,
    due_at: new Date(step.kind === "wait" ? now + step.delayMs : now).toISOString(),
    trigger: input.trigger,
    deferrals: 0,
  });
  return true;
}

/**
 * Redelivery requests 0.1's `callback-redelivery` consumer had not served (or was still retrying)
 * get a wake-up in SWITCHYARD_CALLBACKS, since that consumer goes. Callbacks 0.1 was retrying
 * need nothing: their messages stay parked in the `callback` consumer, which 0.2 keeps, and come
 * back at their time to a service that decides from the same `.cb` log (a second driver would
 * only send them twice).
 */
async function carryRedeliveries(deps: MigrationDeps): Promise<number> {
  const redeliveryFrom = await floorOf(deps, V1_REDELIVERY);
  if (redeliveryFrom === undefined) return 0;
  let wakeups = 0;
  const progress = createProgress({ label: "redelivery requests checked", sink: deps.progress });
  for await (const record of readStream(deps.js, {
    filterSubject: deps.layout.filters.kind(0, "cb"),
    fromSeq: redeliveryFrom,
  })) {
    progress.tick();
    const event = decodeEvent(record.data);
    if (event.type !== "callback.redelivery_requested") continue;
    const job = await readLastEvent(deps, event, "job");
    if (!job) continue;
    const trigger = {
      kind: "redelivery",
      seq: record.seq,
      baseAttempts: event.data.attempts,
    } as const;
    const ref = { clientId: event.client_id, jobId: event.job_id, finalSeq: job.seq, trigger };
    if (await wakeIfOpen(deps, ref)) wakeups++;
  }
  progress.done();
  return wakeups;
}

/**
 * `switchyard migrate`: brings a store written by 0.1 (store version 1) to version 2, with every
 * 0.1 service stopped. Events and views need nothing (0.2 reads them as they are); what 0.1 kept
 * inside consumers moves to the 0.2 work queues, the old consumers are deleted, and the store is
 * marked. Safe to run again: a timer or wake-up published twice is one (duplicate window, one
 * wake-up per job), and a marked store is left alone.
 */
export async function migrateStore(deps: MigrationDeps): Promise<MigrationReport> {
  const from = await readStoreVersion(deps.jsm, deps.meta);
  const none = {
    deadlineTimers: 0,
    resumedHttpAttempts: 0,
    callbackWakeups: 0,
    removedConsumers: [],
  };
  if (from === "fresh" || from >= STORE_VERSION) {
    return { from, to: from === "fresh" ? STORE_VERSION : from, ...none };
  }
  await ensureScheduleStreams(deps.jsm, { replicas: deps.config.nats.replicas });
  const deadlines = await carryDeadlines(deps);
  const callbackWakeups = await carryRedeliveries(deps);
  const removed: string[] = [];
  for (const name of [V1_WATCHDOG, V1_REDELIVERY]) {
    try {
      await deps.jsm.consumers.delete(deps.layout.stream(0), name);
      removed.push(name);
    } catch (err) {
      if (!isJsError(err, "consumerNotFound")) throw err;
    }
  }
  await markStoreVersion(deps.meta);
  return {
    from,
    to: STORE_VERSION,
    deadlineTimers: deadlines.timers,
    resumedHttpAttempts: deadlines.resumed,
    callbackWakeups,
    removedConsumers: removed,
  };
}
