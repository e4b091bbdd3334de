import type {
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from "@nats-io/jetstream";
import {
  decodeEvent,
  ensureDurable,
  PoisonMessageError,
  subjectFilters,
  TOPOLOGY,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import { parseDuration, type RouteTable } from "../../shared/config/index.ts";
import { isFinal } from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { readStatus, TaskSet, writeStatus } from "../../shared/worker/index.ts";
import { recordTransition } from "./observe.ts";

/** Durable consumer name of the deadline watchdog on the events stream. */
export const WATCHDOG_CONSUMER = "watchdog";

/** Looks at open jobs in flight at once. */
const LOOKS_AT_ONCE = 16;

/** A run accepted less than this ago is not looked up on its first delivery. */
const FRESH_RUN_MS = 1_000;

/** Deadline of a job whose route is gone from the config (the schema's default). */
const DEFAULT_DEADLINE_MS = 15 * 60_000;

/**
 * The first look at a run accepted moments ago: its job is almost surely still in flight, so the
 * watchdog waits (returns the milliseconds left) without reading its status, one stream read per
 * job fewer. Undefined means "read the status". A watchdog that lags behind sees older runs,
 * reads, and frees at once the slots of jobs that already finished. Pure.
 */
export function waitUnread(look: {
  readonly deliveryCount: number;
  readonly acceptedAt: number;
  readonly dueAt: number;
  readonly now: number;
}): number | undefined {
  const fresh = look.now - look.acceptedAt < FRESH_RUN_MS;
  return look.deliveryCount === 1 && fresh && look.dueAt > look.now
    ? look.dueAt - look.now
    : undefined;
}

export interface WatchdogDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly routes: RouteTable;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly metrics?: HubMetrics;
  /**
   * Longest wait between two looks at one job. A job that finished early frees its slot at the
   * next look, so the consumer's max_ack_pending is spent on jobs that are really open.
   */
  readonly recheckMs?: number;
  /** Open jobs watched at once (the consumer's max_ack_pending). */
  readonly maxWatched?: number;
}

export interface Watchdog {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Turns jobs that pass their route's deadline into job.error `deadline_exceeded`. It is a durable
 * JetStream timer, so it survives restarts and works on nats-server 2.9 (no per-message TTL or
 * schedules there): a second durable consumer on run.requested, each message held un-acked and
 * nak'ed with a delay until its job is final (ack) or due (append the error, then ack). The
 * append expects the job subject's last sequence, so it can never overwrite an outcome that
 * got in first.
 */
export function createWatchdog(deps: WatchdogDeps): Watchdog {
  const recheckMs = deps.recheckMs ?? 30_000;
  let messages: ConsumerMessages | undefined;
  let loop: Promise<void> | undefined;
  const looking = new TaskSet();

  const handle = async (msg: JsMsg): Promise<void> => {
    let run: ReturnType<typeof decodeEvent>;
    try {
      run = decodeEvent(msg.data);
    } catch (err) {
      if (!(err instanceof PoisonMessageError)) throw err;
      msg.term(err.message);
      return;
    }
    if (run.type !== "run.requested") {
      msg.term("not a run.requested event");
      return;
    }
    const route = deps.routes.route(run.data.route);
    const deadlineMs = route ? parseDuration(route.deadline) : DEFAULT_DEADLINE_MS;
    const acceptedAt = Date.parse(run.occurred_at);
    const dueAt = acceptedAt + deadlineMs;
    const now = deps.clock.now().getTime();
    const unread = waitUnread({ deliveryCount: msg.info.deliveryCount, acceptedAt, dueAt, now });
    if (unread !== undefined) {
      msg.nak(Math.min(unread, recheckMs));
      return;
    }
    const current = await readStatus(deps.jsm, run);
    if (isFinal(current.status)) {
      msg.ack();
      return;
    }
    const wait = dueAt - now;
    if (wait > 0) {
      msg.nak(Math.min(wait, recheckMs));
      return;
    }
    const result = await writeStatus(
      deps,
      run,
      (c) =>
        isFinal(c.status)
          ? undefined
          : {
              type: "job.error",
              data: {
                code: "deadline_exceeded",
                message: `the job did not finish within its deadline of ${route?.deadline ?? "15m"}`,
              },
            },
      { known: current },
    );
    if (result.kind === "appended") {
      recordTransition(deps.metrics, run.data.route, result.event, { created_at: run.occurred_at });
      deps.logger.warn(
        { job_id: run.job_id, client_id: run.client_id, from: current.status },
        "deadline exceeded",
      );
    }
    msg.ack();
  };

  return {
    async start() {
      await ensureDurable(deps.jsm, {
        name: WATCHDOG_CONSUMER,
        filterSubject: subjectFilters.kind("run"),
        ackWaitMs: 30_000,
        maxAckPending: deps.maxWatched ?? 20_000,
      });
      const consumer = await deps.js.consumers.get(TOPOLOGY.eventsStream, WATCHDOG_CONSUMER);
      messages = await consumer.consume({ max_messages: 256 });
      const stream = messages;
      loop = (async () => {
        for await (const msg of stream) {
          // A look is one or two small JetStream requests; a few run at once.
          while (looking.size >= LOOKS_AT_ONCE) await looking.freed();
          looking.add(
            handle(msg).catch((err: unknown) => {
              deps.logger.error(
                { seq: msg.seq, err: (err as Error).message },
                "watchdog look failed",
              );
              msg.nak(1_000);
            }),
          );
        }
        await looking.settled();
      })();
    },
    async stop() {
      await messages?.close();
      await loop;
    },
  };
}
