import { Elysia } from "elysia";
import { NotFoundError } from "../../../shared/errors/index.ts";
import { EXECUTOR_REPORT_PATH, type ExecutorReportHandler } from "../executor-reports.ts";
import { requireNats } from "./respond.ts";

export interface ExecutorReportsPluginDeps {
  /** False while NATS is disconnected: answer 503 at once instead of waiting for a timeout. */
  readonly natsConnected: () => boolean;
  /** POST /executor/v1/jobs/{job_id}/events (docs/executors.md); absent: 404. */
  readonly executorReports?: ExecutorReportHandler;
}

/** An HTTP executor's reports on a job it runs, authenticated by the job's report token. */
export function executorReportsPlugin(deps: ExecutorReportsPluginDeps) {
  return new Elysia({ name: "ingress-executor-reports", normalize: false }).post(
    EXECUTOR_REPORT_PATH,
    ({ request, params }) => {
      if (!deps.executorReports) {
        throw new NotFoundError({ detail: "Executor reports are not enabled here." });
      }
      requireNats(deps.natsConnected);
      return deps.executorReports.handle(request, params.job_id);
    },
    { parse: "none" },
  );
}
