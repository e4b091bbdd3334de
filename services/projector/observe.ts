import { TRACEPARENT_HEADER } from "../../shared/bus/index.ts";
import { parseIsoMs } from "../../shared/clock/index.ts";
import { isFinal, type JobState, type JobView } from "../../shared/domain/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { headerOf } from "../../shared/nats/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import type { HeldView } from "./view-model.ts";

export type ProjectorMetrics = Pick<HubMetrics, "latency" | "jobsCompleted">;

/** The view as it became final, when this event made it so (else undefined). */
export function completedBy(before: JobState, after: JobView): JobView | undefined {
  return isFinal(after.status) && !(before !== null && isFinal(before.status)) ? after : undefined;
}

/**
 * Counts a job that reached a final status and observes its latency from acceptance, once its
 * view is written. Every final status passes through here, whoever wrote it (the executor, a NATS
 * worker, an executor report, a deadline timer).
 */
export function observeCompletion(metrics: ProjectorMetrics | undefined, view: JobView): void {
  if (!metrics) return;
  const code = view.status === "done" ? "" : (view.error?.code ?? "");
  metrics.jobsCompleted.inc({ route: view.route, status: view.status, code });
  const end = parseIsoMs(view.completed_at ?? view.updated_at);
  const seconds = (end - parseIsoMs(view.created_at)) / 1000;
  if (Number.isFinite(seconds) && seconds >= 0)
    metrics.latency.observe({ route: view.route }, seconds);
}

/**
 * A held job's view write as a `project` span in the job's trace (the traceparent its events
 * carry). Without tracing this is the write itself: no header is read.
 */
export function tracedWrite(
  tracing: Tracing,
  job: HeldView,
  write: () => Promise<boolean>,
): Promise<boolean> {
  const last = job.events[job.events.length - 1];
  if (!tracing.enabled || last === undefined) return write();
  const span = tracing.start("project", {
    parent: headerOf(last.msg, TRACEPARENT_HEADER),
    attributes: {
      job_id: last.event.job_id,
      client_id: last.event.client_id,
      route: job.state?.view?.route,
    },
  });
  return write().then(
    (ok) => {
      span.end(ok ? undefined : "write_failed");
      return ok;
    },
    (err: unknown) => {
      span.end(err);
      throw err;
    },
  );
}
