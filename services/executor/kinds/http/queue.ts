import type { JsMsg } from "@nats-io/jetstream";
import { TRACEPARENT_HEADER, terminate } from "../../../../shared/bus/index.ts";
import { readStatus } from "../../../../shared/jobs/index.ts";
import { lazyChild } from "../../../../shared/log/index.ts";
import { headerOf } from "../../../../shared/nats/index.ts";
import { traceIdOf } from "../../../../shared/trace/index.ts";
import {
  decodeTask,
  type PullLoop,
  runPullLoop,
  TASK_STREAM,
  TaskSet,
  taskConsumerName,
} from "../../../../shared/worker/index.ts";
import type { Slots } from "../../slots.ts";
import { ExecutorStoppingError, type RouteOf } from "../kind.ts";
import { type AttemptDeps, attemptHttp, type HttpJob } from "./attempt.ts";
import { httpStanding } from "./standing.ts";

export interface RouteQueue {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Sends one HTTP route's queued tasks: jobs that found the route busy, and retries. Each delivery
 * reads the job's log (this is not the common path) and acts on it: a retry not yet due is parked
 * in JetStream with nak(delay), a due one is attempted, a job no longer the dispatcher's (final,
 * running, accepted) is acked. Pulls are sized to the route's free slots in this process and the
 * process-wide cap.
 */
export function createRouteQueue(deps: {
  readonly attempt: AttemptDeps;
  readonly route: RouteOf<"http">;
  readonly slots: Slots;
}): RouteQueue {
  const { ctx } = deps.attempt;
  const { route } = deps;
  const logger = ctx.logger.child({ route: route.key });
  const running = new TaskSet();
  let loop: PullLoop | undefined;

  /**
   * The route's slot for a pulled task. The pull was sized to the free slots, but a direct attempt
   * from the admission may have taken one since: then the task waits (kept alive) for the next.
   */
  const routeSlot = async (msg: JsMsg): Promise<() => void> => {
    for (;;) {
      const release = deps.slots.tryTake();
      if (release) return release;
      msg.working();
      await deps.slots.freed();
    }
  };

  const handle = async (msg: JsMsg): Promise<void> => {
    const task = decodeTask(msg.data);
    if (task === undefined || task.route !== route.key) {
      logger.error({ seq: msg.seq }, "not a task for this route; terminated");
      return terminate(msg);
    }
    const current = await readStatus(ctx, task);
    const standing = httpStanding(current, ctx.clock.now().getTime());
    if (standing.kind === "handed_over") return msg.ack();
    if (standing.kind === "wait") return msg.nak(standing.delayMs);
    const traceparent = headerOf(msg, TRACEPARENT_HEADER);
    const job: HttpJob = {
      context: {
        ref: { client_id: task.client_id, job_id: task.job_id },
        route: route.key,
        createdAt: task.created_at,
        ...(task.run ? { summary: task.run } : {}),
        ...(traceparent ? { traceparent } : {}),
      },
      route,
      task,
      deadlineAt: Date.parse(task.deadline),
      keepAlive: () => msg.working(),
      log: lazyChild(logger, () => ({
        job_id: task.job_id,
        ...(traceparent ? { trace_id: traceIdOf(traceparent) } : {}),
      })),
    };
    const end = await attemptHttp(deps.attempt, { job, attempt: standing.attempt, known: current });
    if (end.kind === "retry") return msg.nak(end.delayMs);
    msg.ack();
  };

  return {
    async start() {
      const consumer = await ctx.js.consumers.get(TASK_STREAM, taskConsumerName(route.key));
      loop = runPullLoop({
        consumer,
        nc: ctx.nc,
        free: () => Math.min(deps.slots.free(), ctx.slots.free()),
        slotFreed: () => (deps.slots.free() <= 0 ? deps.slots.freed() : ctx.slots.freed()),
        onError: (err) => logger.warn({ err: (err as Error).message }, "pull failed; retrying"),
        onMessage: (msg) => {
          const releaseProcess = ctx.slots.take();
          let releaseRoute: () => void = () => {};
          running.add(
            routeSlot(msg)
              .then((release) => {
                releaseRoute = release;
                return handle(msg);
              })
              .catch((err: unknown) => {
                if (err instanceof ExecutorStoppingError) return msg.nak(0);
                logger.error({ seq: msg.seq, err: (err as Error).message }, "task failed; retry");
                msg.nak(1_000);
              })
              .finally(() => {
                releaseRoute();
                releaseProcess();
              }),
          );
        },
      });
    },
    async stop() {
      await loop?.stop();
      await running.settled();
    },
  };
}
