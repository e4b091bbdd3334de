import type { JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  consumeRecovering,
  logConsumeRestarts,
  type RecoveringConsume,
  TRACEPARENT_HEADER,
  terminate,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import { deadlineExceeded } from "../../shared/domain/index.ts";
import type { EventLayout } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { headerOf } from "../../shared/nats/index.ts";
import {
  DEADLINE_STREAM,
  DEADLINE_WINDOW,
  type DeadlineTimer,
  deadlineOfConsumer,
  decodeDeadlineTimer,
  ensureDeadlineConsumer,
  publishDeadlineTimer,
} from "../../shared/schedule/index.ts";
import { TaskSet } from "../../shared/worker/index.ts";
import type { JobContext, JobWriter } from "./job-writer.ts";

/** The job's trace context, carried by its timer. */
function traceOf(msg: JsMsg): { traceparent?: string } {
  const traceparent = headerOf(msg, TRACEPARENT_HEADER);
  return traceparent ? { traceparent } : {};
}

/** How often a replica looks for deadline lengths another replica started. */
const DISCOVERY_MS = 30_000;
/** A timer this close to its due time fires rather than waiting again. */
const SLACK_MS = 50;

export interface DeadlineTimers {
  /**
   * Sets a durable timer for a job that leaves this process unfinished (a NATS worker's task, an
   * HTTP 202, a task waiting in a route queue). Resolves once the timer is stored.
   */
  schedule(input: {
    readonly job: JobContext;
    readonly dueAt: number;
    readonly deadlineMs: number;
    readonly expectedSeq: number;
  }): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface DeadlineTimersDeps {
  /** Its reconnects start the timers' pulls again. */
  readonly nc: Pick<NatsConnection, "status">;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  readonly writer: JobWriter;
  readonly logger: Logger;
  readonly clock: Clock;
  /**
   * The deadline lengths of the configured routes: every replica consumes them from the start, so
   * timers set by a replica that died are fired by the others at their due time.
   */
  readonly deadlinesMs: readonly number[];
}

/**
 * Deadline enforcement at O(1) per job, on nats-server 2.9 (no per-message TTL or schedules).
 * Jobs the executor holds (builtins, HTTP attempts) are timed in process and, after a crash,
 * re-admitted from the redelivered run.requested. Only a job handed over unfinished gets a timer:
 * one message in SWITCHYARD_DEADLINES on the subject of its deadline length. In one subject due
 * order is publish order, so each length's consumer looks at the oldest WINDOW timers only, parks
 * them (nak with the time left) and fires them in order: nothing is held longer than the deadline
 * needs, no status is read before a timer is due, and the cost does not grow with the events
 * stream. At the due time the expiry append expects the sequence recorded with the timer; if the
 * job moved since, it is read once and the domain decides (a finished job is left alone).
 */
export function createDeadlineTimers(deps: DeadlineTimersDeps): DeadlineTimers {
  const streams: RecoveringConsume[] = [];
  /** Lengths being consumed (or starting): a length first seen at schedule time starts then. */
  const consumed = new Map<number, Promise<void>>();
  const loops: Promise<void>[] = [];
  const firing = new TaskSet();

  const fire = async (timer: DeadlineTimer, msg: JsMsg) => {
    const job: JobContext = {
      ref: { client_id: timer.client_id, job_id: timer.job_id },
      route: timer.route,
      createdAt: timer.created_at,
      ...(timer.run ? { summary: timer.run } : {}),
      ...traceOf(msg),
    };
    const result = await deps.writer.write(
      job,
      deadlineExceeded("the job did not finish within its deadline"),
      { known: { status: "dispatched", last: null, seq: timer.expected_seq } },
    );
    if (result.kind === "appended") {
      deps.logger.warn({ job_id: timer.job_id, client_id: timer.client_id }, "deadline exceeded");
    }
    msg.ack();
  };

  const handle = (msg: JsMsg) => {
    const timer = decodeDeadlineTimer(msg.data);
    if (timer === undefined) {
      deps.logger.error({ seq: msg.seq }, "invalid deadline timer terminated");
      terminate(msg);
      return;
    }
    const wait = Date.parse(timer.due_at) - deps.clock.now().getTime();
    if (wait > SLACK_MS) {
      msg.nak(wait);
      return;
    }
    firing.add(
      fire(timer, msg).catch((err: unknown) => {
        deps.logger.error({ seq: msg.seq, err: (err as Error).message }, "deadline timer failed");
        msg.nak(1_000);
      }),
    );
  };

  const consumeLength = async (deadlineMs: number) => {
    const name = await ensureDeadlineConsumer(deps.jsm, deadlineMs);
    const consumer = await deps.js.consumers.get(DEADLINE_STREAM, name);
    const messages = await consumeRecovering({
      consumer,
      nc: deps.nc,
      maxMessages: DEADLINE_WINDOW,
      restarted: logConsumeRestarts(deps.logger, name),
    });
    streams.push(messages);
    loops.push(
      (async () => {
        for await (const msg of messages) handle(msg);
      })(),
    );
  };

  /** Lengths with a consumer already: timers of a route whose deadline changed still fire. */
  const existingLengths = async (): Promise<number[]> => {
    const lengths: number[] = [];
    for await (const info of deps.jsm.consumers.list(DEADLINE_STREAM)) {
      const ms = deadlineOfConsumer(info.name);
      if (ms !== undefined) lengths.push(ms);
    }
    return lengths;
  };

  /** Consumes the configured lengths and every length that has a consumer. */
  const discover = async () => {
    for (const ms of [...deps.deadlinesMs, ...(await existingLengths())]) {
      if (!consumed.has(ms)) consumed.set(ms, consumeLength(ms));
    }
    await Promise.all(consumed.values());
  };
  let discovery: ReturnType<typeof setInterval> | undefined;

  return {
    async schedule({ job, dueAt, deadlineMs, expectedSeq }) {
      if (!consumed.has(deadlineMs)) consumed.set(deadlineMs, consumeLength(deadlineMs));
      const timer: DeadlineTimer = {
        client_id: job.ref.client_id,
        job_id: job.ref.job_id,
        route: job.route,
        created_at: job.createdAt,
        due_at: new Date(dueAt).toISOString(),
        expected_seq: expectedSeq,
        ...(job.summary ? { run: job.summary } : {}),
      };
      await publishDeadlineTimer(deps.js, timer, { deadlineMs, traceparent: job.traceparent });
    },
    async start() {
      await discover();
      // Lengths no configured route has any more (a deadline changed) still have timers: look
      // for them now and then.
      discovery = setInterval(() => {
        discover().catch((err: unknown) =>
          deps.logger.warn({ err: (err as Error).message }, "deadline consumers not listed"),
        );
      }, DISCOVERY_MS);
    },
    async stop() {
      clearInterval(discovery);
      await Promise.all(streams.map((m) => m.close()));
      await Promise.all(loops);
      await firing.settled();
    },
  };
}
