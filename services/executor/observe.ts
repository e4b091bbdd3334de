import { type StatusEvent, statusOfEvent } from "../../shared/domain/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";

/**
 * Counts an appended status event. The completion latency is observed by the projector, which
 * sees every final status (NATS workers' and executor reports' too), not only the executor's.
 */
export function recordTransition(
  metrics: HubMetrics | undefined,
  route: string,
  event: StatusEvent,
): void {
  metrics?.transitions.inc({ status: statusOfEvent(event), route });
}
