import { parseDuration } from "../../../../shared/config/index.ts";
import { type DispatchIndex, openDispatchIndex } from "../../../../shared/dispatch/index.ts";
import type { CurrentStatus } from "../../../../shared/jobs/index.ts";
import { traceHeaders } from "../../../../shared/trace/index.ts";
import {
  encodeTask,
  ensureRouteConsumer,
  type Task,
  taskSubject,
} from "../../../../shared/worker/index.ts";
import { createSlots, type Slots } from "../../slots.ts";
import { isRefusal } from "../../task.ts";
import {
  type AdmittedJob,
  type ExecutorKind,
  type KindContext,
  type KindRuntime,
  type RouteOf,
  STOP_GRACE_MS,
} from "../kind.ts";
import { attemptHttp, type HttpJob } from "./attempt.ts";
import { createRouteQueue, type RouteQueue } from "./queue.ts";
import { httpStanding } from "./standing.ts";

function isHttpRoute(route: KindContext["routes"][number]): route is RouteOf<"http"> {
  return route.executor.kind === "http";
}

/**
 * HTTP executors (docs/executors.md). The first attempt is made straight from the admission when
 * the route has a free slot in this process, so a job answered 2xx is run.requested + job.done and
 * nothing else. A job that finds the route busy, and every retry, goes to the route's work queue
 * `sy.task.<route>` (its consumer's max_ack_pending is the route's concurrency over all replicas):
 * a slow or failing executor then fills its own queue, never the admission's consumer, and its
 * retries wait in JetStream, not in memory.
 */
export const httpKind: ExecutorKind = {
  async start(ctx: KindContext): Promise<KindRuntime> {
    const routes = ctx.routes.filter(isHttpRoute);
    const abort = new AbortController();
    const index: DispatchIndex = await openDispatchIndex(ctx.nc, {
      replicas: ctx.replicas,
      ttlMs: Math.max(...routes.map((r) => parseDuration(r.deadline)), 60_000) * 2,
    });
    const routeSlots = new Map<string, Slots>();
    const queues: RouteQueue[] = [];
    const attemptDeps = { ctx, index, signal: abort.signal };
    for (const route of routes) {
      await ensureRouteConsumer(ctx.jsm, {
        route: route.key,
        maxAckPending: route.concurrency,
        // Short, so a crashed replica's tasks come back soon; an attempt calls working().
        ackWaitMs: 10_000,
        // The dispatcher counts attempts in the job's log.
        maxDeliver: -1,
      });
      const slots = createSlots(route.concurrency);
      routeSlots.set(route.key, slots);
      if (!route.enabled) continue;
      queues.push(createRouteQueue({ attempt: attemptDeps, route, slots }));
    }
    for (const queue of queues) await queue.start();

    /** Puts the job in its route's queue (busy route, or a retry) with a deadline timer. */
    const enqueue = async (job: AdmittedJob, task: Task, known: CurrentStatus) => {
      const traceparent = job.context.traceparent;
      await ctx.js.publish(
        taskSubject(job.route.key),
        encodeTask({ ...task, expected_seq: known.seq }),
        {
          // One queued task per step of the job: a republish after a crash is dropped.
          msgID: `${task.job_id}:${known.seq}`,
          ...(traceparent ? { headers: traceHeaders(traceparent) } : {}),
        },
      );
      await ctx.deadlines.schedule({
        job: job.context,
        dueAt: job.deadlineAt,
        deadlineMs: parseDuration(job.route.deadline),
        expectedSeq: known.seq,
      });
    };

    return {
      async run(job) {
        if (!isHttpRoute(job.route)) throw new Error("not an HTTP route");
        const standing = httpStanding(job.current, ctx.clock.now().getTime());
        if (standing.kind === "handed_over") return;
        const task = await ctx.tasks.build(job);
        if (isRefusal(task)) {
          await ctx.writer.write(job.context, task, { known: job.current });
          return;
        }
        const release =
          standing.kind === "attempt" ? routeSlots.get(job.route.key)?.tryTake() : undefined;
        if (release === undefined || standing.kind !== "attempt") {
          await enqueue(job, task, job.current);
          return;
        }
        const httpJob: HttpJob = {
          context: job.context,
          route: job.route,
          task,
          deadlineAt: job.deadlineAt,
          keepAlive: job.keepAlive,
          log: job.log,
          dispatchSpan: job.dispatchSpan,
        };
        try {
          const end = await attemptHttp(attemptDeps, {
            job: httpJob,
            attempt: standing.attempt,
            known: job.current,
          });
          if (end.kind === "retry") await enqueue(job, task, end.known);
        } finally {
          release();
        }
      },
      async stop() {
        // A graceful stop lets attempts in flight finish (their POSTs are within the route's
        // timeout); only what outlasts the grace period is cut short and resent by another replica.
        const finished = Promise.all(queues.map((q) => q.stop()));
        const grace = setTimeout(() => abort.abort(), STOP_GRACE_MS);
        await finished;
        clearTimeout(grace);
      },
    };
  },
};
