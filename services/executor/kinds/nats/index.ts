import { parseDuration } from "../../../../shared/config/index.ts";
import { statusAfterWrite } from "../../../../shared/jobs/index.ts";
import { headersOf } from "../../../../shared/nats/index.ts";
import { traceHeaders } from "../../../../shared/trace/index.ts";
import {
  encodeTask,
  ensureRouteConsumer,
  PARTITIONS_HEADER,
  taskSubject,
} from "../../../../shared/worker/index.ts";
import { isRefusal } from "../../task.ts";
import type { AdmittedJob, ExecutorKind, KindContext, KindRuntime } from "../kind.ts";

/**
 * NATS workers (shared/worker): the task goes to the route's work queue `sy.task.<route>`, whose
 * durable consumer's max_ack_pending is the route's concurrency over every worker. The job is
 * recorded as dispatched before the task is published (so a worker's job.running always follows
 * it) and gets a deadline timer, since nothing in this process waits for it.
 */
export const natsKind: ExecutorKind = {
  runSpan: { name: "hand over nats", kind: "producer" },
  async start(ctx: KindContext): Promise<KindRuntime> {
    for (const route of ctx.routes) {
      if (route.executor.kind !== "nats") continue;
      await ensureRouteConsumer(ctx.jsm, {
        route: route.key,
        maxAckPending: route.concurrency,
        ackWaitMs: parseDuration(route.executor.ack_wait),
        maxDeliver: route.executor.max_deliver,
      });
    }

    const handOver = async (job: AdmittedJob) => {
      let current = job.current;
      const task = await ctx.tasks.build(job);
      if (isRefusal(task)) {
        await ctx.writer.write(job.context, task, { known: current });
        return;
      }
      if (current.status === "queued") {
        const dispatched = await ctx.writer.write(
          job.context,
          { type: "job.dispatched", data: { target: "nats", attempt: 1 } },
          { known: current },
        );
        current = statusAfterWrite(dispatched);
        if (current.status !== "dispatched") return;
      }
      // The job id as Nats-Msg-Id: a republish after a crash is dropped by the server.
      const traceparent = job.context.traceparent;
      await ctx.js.publish(
        taskSubject(job.route.key),
        encodeTask({ ...task, expected_seq: current.seq }),
        { msgID: job.run.job_id, ...taskHeaders(ctx.layout.partitions, traceparent) },
      );
      await ctx.deadlines.schedule({
        job: job.context,
        dueAt: job.deadlineAt,
        deadlineMs: parseDuration(job.route.deadline),
        expectedSeq: current.seq,
      });
    };

    return {
      async run(job) {
        // Running: a worker has it. Dispatched (a redelivery after a crash between the append
        // and the ack): publish again; the duplicate window drops a task that got through.
        if (job.current.status === "running") return;
        await handOver(job);
      },
      async stop() {},
    };
  },
};

/** A task's headers: its trace context, and the partition count of a hub of several. */
function taskHeaders(partitions: number, traceparent: string | undefined) {
  if (partitions === 1) return traceparent ? { headers: traceHeaders(traceparent) } : {};
  return {
    headers: headersOf({
      [PARTITIONS_HEADER]: String(partitions),
      ...(traceparent ? { traceparent } : {}),
    }),
  };
}
