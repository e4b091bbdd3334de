import { deadlineExceeded, isFinal } from "../../../../shared/domain/index.ts";
import { statusAfterWrite } from "../../../../shared/jobs/index.ts";
import type { AdmittedJob, ExecutorKind, KindContext, KindRuntime } from "../kind.ts";

/**
 * Builtin executors run inside the executor process: `echo` answers with the input, `sleep` waits
 * `sleep_ms` first. The run.requested stays un-acked while a builtin runs, so a crash hands the job
 * to another replica; its deadline is a timer in this process (no deadline message is stored).
 */
export const builtinKind: ExecutorKind = {
  runSpan: { name: "execute builtin", kind: "internal" },
  async start(ctx: KindContext): Promise<KindRuntime> {
    /** Waits `ms`, keeping the message alive: slept, or the deadline or a cancel came first. */
    const sleep = (job: AdmittedJob, ms: number): Promise<"slept" | "deadline" | "cancelled"> =>
      new Promise((resolve) => {
        const remaining = job.deadlineAt - ctx.clock.now().getTime();
        const keepAlive = setInterval(job.keepAlive, 1_000);
        const cancel = ctx.cancels.track(job.run.job_id);
        const end = (how: "slept" | "deadline" | "cancelled") => {
          clearInterval(keepAlive);
          clearTimeout(timer);
          cancel.release();
          resolve(how);
        };
        const timer = setTimeout(
          () => end(ms <= remaining ? "slept" : "deadline"),
          Math.max(0, Math.min(ms, remaining)),
        );
        // A cancelled job is final already: stop sleeping, write nothing.
        cancel.signal.addEventListener("abort", () => end("cancelled"), { once: true });
        if (cancel.signal.aborted) end("cancelled");
      });

    return {
      async run(job) {
        if (job.route.executor.kind !== "builtin") throw new Error("not a builtin route");
        const executor = job.route.executor;
        let current = job.current;
        // An instant builtin goes straight to job.done: a job.running nobody can observe would cost
        // one more stored event, projector write and consumer delivery per job.
        if (executor.name === "sleep" && executor.sleep_ms > 0) {
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
        // A graceful stop lets running builtins finish (their messages are acked after).
      },
    };
  },
};
