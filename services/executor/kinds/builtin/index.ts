import { deadlineExceeded, isFinal } from "../../../../shared/domain/index.ts";
import { statusAfterWrite } from "../../../../shared/jobs/index.ts";
import {
  type AdmittedJob,
  type ExecutorKind,
  ExecutorStoppingError,
  type KindContext,
  type KindRuntime,
  STOP_GRACE_MS,
} from "../kind.ts";

type SleepEnd = "slept" | "deadline" | "cancelled" | "stopping";

/**
 * Builtin executors run inside the executor process: `echo` answers with the input, `sleep` waits
 * `sleep_ms` first. The run.requested stays un-acked while a builtin runs, so a crash hands the job
 * to another replica; its deadline is a timer in this process (no deadline message is stored). At
 * a graceful stop a sleep that ends within the stop's grace finishes; a longer one is cut short at
 * once and its run handed back (waiting would only delay the cut): a sleep started nothing outside
 * the process, and another replica sleeps again from the start.
 */
export const builtinKind: ExecutorKind = {
  runSpan: { name: "execute builtin", kind: "internal" },
  async start(ctx: KindContext): Promise<KindRuntime> {
    /** Every sleep in progress: when it ends by itself, and how to cut it short. */
    const sleeping = new Set<{ readonly endsAt: number; readonly end: (how: SleepEnd) => void }>();
    let stopping = false;
    /** Waits `ms`, keeping the message alive: slept, or the deadline, a cancel or a stop came first. */
    const sleep = (job: AdmittedJob, ms: number): Promise<SleepEnd> =>
      new Promise((resolve) => {
        const remaining = job.deadlineAt - ctx.clock.now().getTime();
        const keepAlive = setInterval(job.keepAlive, 1_000);
        const cancel = ctx.cancels.track(job.run.job_id);
        let ended = false;
        const end = (how: SleepEnd) => {
          if (ended) return;
          ended = true;
          sleeping.delete(entry);
          clearInterval(keepAlive);
          clearTimeout(timer);
          cancel.release();
          resolve(how);
        };
        const sleepMs = Math.max(0, Math.min(ms, remaining));
        const entry = { endsAt: Date.now() + sleepMs, end };
        sleeping.add(entry);
        const timer = setTimeout(() => end(ms <= remaining ? "slept" : "deadline"), sleepMs);
        // A cancelled job is final already: stop sleeping, write nothing.
        cancel.signal.addEventListener("abort", () => end("cancelled"), { once: true });
        if (cancel.signal.aborted) end("cancelled");
        if (stopping && sleepMs > STOP_GRACE_MS) end("stopping");
      });

    return {
      async run(job) {
        if (job.route.executor.kind !== "builtin") throw new Error("not a builtin route");
        const executor = job.route.executor;
        let current = job.current;
        // An instant builtin goes straight to job.done: a job.running nobody can observe would cost
        // one more stored event, projector write and consumer delivery per job.
        if (executor.name === "sleep" && executor.sleep_ms > 0) {
          // Taken while stopping (the pull was still open): record nothing, hand it back.
          if (stopping && executor.sleep_ms > STOP_GRACE_MS) throw new ExecutorStoppingError();
          const started = await ctx.writer.write(
            job.context,
            { type: "job.running", data: {} },
            {
              known: current,
            },
          );
          current = statusAfterWrite(started);
          if (isFinal(current.status)) return;
          const slept = await sleep(job, executor.sleep_ms);
          if (slept === "cancelled") return;
          if (slept === "stopping") throw new ExecutorStoppingError();
          if (slept === "deadline") {
            await ctx.writer.write(
              job.context,
              deadlineExceeded(
                `the job did not finish within its deadline of ${job.route.deadline}`,
              ),
              { known: current },
            );
            return;
          }
        }
        await ctx.writer.write(
          job.context,
          { type: "job.done", data: { output: job.run.data.input } },
          { known: current },
        );
      },
      async stop() {
        stopping = true;
        const graceEndsAt = Date.now() + STOP_GRACE_MS;
        for (const { endsAt, end } of [...sleeping]) if (endsAt > graceEndsAt) end("stopping");
      },
    };
  },
};
