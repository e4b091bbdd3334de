import { isFinal, type StatusEvent, statusOfEvent } from "../../shared/domain/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";

/**
 * Counts an appended status event, and on a final status observes the run's latency from
 * acceptance (`created_at`, the run.requested time) to the event.
 */
export function recordTransition(
  metrics: HubMetrics | undefined,
  route: string,
  event: StatusEvent,
  run: { readonly created_at: string },
): void {
  if (!metrics) return;
  const status = statusOfEvent(event);
  metrics.transitions.inc({ status, route });
  if (isFinal(status)) {
    const seconds = (Date.parse(event.occurred_at) - Date.parse(run.created_at)) / 1000;
    if (Number.isFinite(seconds) && seconds >= 0) metrics.latency.observe({ route }, seconds);
  }
}
