import { deadlineExceeded, isFinal } from "../../../../shared/domain/index.ts";
import { statusAfterWrite } from "../../../../shared/jobs/index.ts";
import {
  type AdmittedJob,
  type ExecutorKind,
  type KindContext,
  type KindRuntime,
  WorkInterruptedError,
} from "../kind.ts";

type SleepEnd = "slept" | "deadline" | "cancelled" | "stopped";

/**
 * Builtin executors run inside the executor process: `echo` answers with the input, `sleep` waits
 * `sleep_ms` first. The run.requested stays un-acked while a builtin runs, so a crash hands the job
 * to another replica; its deadline is a timer in this process (no deadline message is stored).
 */
export const builtinKind: ExecutorKind = {
  runSpan: { name: "execute builtin", kind: "internal" },
  async start(ctx: KindContext): Promise<KindRuntime> {
    /** Aborted by stop(): a sleep still running is left for another replica. */
    const stopping = new AbortController();
    /** Waits `ms`, keeping the message alive: slept, or the deadline, a cancel or a stop came first. */
    const sleep = (job: AdmittedJob, ms: number): Promise<SleepEnd> =>
      new Promise((resolve) => {
        const remaining = job.deadlineAt - ctx.clock.now().getTime();
        const keepAlive = setInterval(job.keepAlive, 1_000);
        const cancel = ctx.cancels.track(job.run.job_id);
        const end = (how: SleepEnd) => {
          clearInterval(keepAlive);
          clearTimeout(timer);
          cancel.release();
          stopping.signal.removeEventListener("abort", stopped);
          resolve(how);
        };
        const stopped = () => end("stopped");
        const timer = setTimeout(
          () => end(ms <= remaining ? "slept" : "deadline"),
          Math.max(0, Math.min(ms, remaining)),
        );
        // A cancelled job is final already: stop sleeping, write nothing.
        cancel.signal.addEventListener("abort", () => end("cancelled"), { once: true });
        if (cancel.signal.aborted) end("cancelled");
        stopping.signal.addEventListener("abort", stopped, { once: true });
        if (stopping.signal.aborted) end("stopped");
      });

    return {
      async run(job) {
        if (job.route.executor.kind !== "builtin") throw new Error("not a builtin route");
        const executor = job.route.executor;
        let current = job.current;
        // An instant builtin goes straight to job.done: a job.running nobody can observe would cost
        // one more stored event, projector write and consumer delivery per job.
        if (executor.name === "sleep" && executor.sleep_ms > 0) {
          // Running already: a sleep a stopping replica left (it sleeps anew, recorded once).
          if (current.status !== "running") {
            const started = await ctx.writer.write(
              job.context,
              { type: "job.running", data: {} },
              { known: current },
            );
            current = statusAfterWrite(started);
          }
          if (isFinal(current.status)) return;
          const slept = await sleep(job, executor.sleep_ms);
          if (slept === "cancelled") return;
          if (slept === "stopped") throw new WorkInterruptedError();
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
        // A sleep is nothing in flight elsewhere: rather than hold the stop for its length (past
        // Kubernetes' grace period for a long one), it is left un-acked for another replica,
        // which sleeps it anew. Instant builtins finish.
        stopping.abort();
      },
    };
  },
};
