import { endWhenSettled, NO_TRACING, type Tracing } from "../../../shared/telemetry/index.ts";
import type { ExecutorKind, KindRuntime } from "./kind.ts";

/**
 * The runtime of a kind that declares a `runSpan`: every run is one span, a child of the
 * admission's dispatch span (docs/operations.md, "Traces"). Unchanged when tracing is off.
 */
export function withRunSpans(
  kind: ExecutorKind,
  runtime: KindRuntime,
  tracing: Tracing = NO_TRACING,
): KindRuntime {
  const span = kind.runSpan;
  if (span === undefined || !tracing.enabled) return runtime;
  return {
    run(job) {
      const started = tracing.start(span.name, {
        parent: job.dispatchSpan ?? job.context.traceparent,
        kind: span.kind,
        attributes: { job_id: job.run.job_id, client_id: job.run.client_id, route: job.route.key },
      });
      return endWhenSettled(started, runtime.run(job));
    },
    stop: () => runtime.stop(),
  };
}
