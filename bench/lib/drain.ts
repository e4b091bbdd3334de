/**
 * Waiting for the hub's background work, read from nats-server's monitoring endpoint (no JetStream
 * API calls, so the benchmark does not add to the counters it reports). Generic: every consumer on
 * every stream counts, whatever the hub's topology is at the time.
 */
import { round } from "./common.ts";
import { type Backlog, type JetStreamMonitor, undrained } from "./jetstream.ts";

export interface DrainDeps {
  readonly monitor: JetStreamMonitor;
  readonly log: (line: string) => void;
  readonly notes: string[];
}

const describe = (backlog: readonly Backlog[]) =>
  backlog.map((b) => `${b.consumer} ${b.pending} pending + ${b.ackPending} ack-pending`).join(", ");

/**
 * Resolves when every consumer on every stream has 0 pending and 0 ack-pending twice in a row,
 * 250 ms apart (a service acks only after it persisted what follows, so an all-zero reading means
 * nothing is in flight). After `timeoutSec` it notes which consumers did not drain and resolves
 * NaN; otherwise the seconds it took.
 */
export async function drainHub(
  deps: DrainDeps,
  label: string,
  timeoutSec: number,
): Promise<number> {
  const start = Date.now();
  let lastLog = start;
  let zeroes = 0;
  let backlog: Backlog[] = [];
  while (Date.now() < start + timeoutSec * 1000) {
    backlog = undrained(await deps.monitor.jsz());
    zeroes = backlog.length === 0 ? zeroes + 1 : 0;
    if (zeroes >= 2) {
      const sec = round((Date.now() - start) / 1000, 1);
      deps.log(`hub drained after ${label} in ${sec} s`);
      return sec;
    }
    if (backlog.length > 0 && Date.now() - lastLog > 5_000) {
      lastLog = Date.now();
      deps.log(`draining after ${label}: ${describe(backlog)}`);
    }
    await Bun.sleep(250);
  }
  const message = `hub did not drain within ${timeoutSec} s after ${label}: ${describe(backlog)}`;
  deps.log(message);
  deps.notes.push(message);
  return Number.NaN;
}

/** Polls every consumer's pending + ack-pending and keeps each one's peak and means, until stopped. */
export function watchBacklog(monitor: JetStreamMonitor, intervalMs = 200) {
  const peaks: Record<string, number> = {};
  // Sums of each consumer's undelivered (pending) and delivered-unacked (ackPending) messages
  // over the polls: their means, divided by the throughput, are the mean time a message spends
  // in each (Little's law; bench/latency-stages.ts).
  const sums: Record<string, { pending: number; ackPending: number }> = {};
  let polls = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const jsz = await monitor.jsz();
        polls++;
        for (const [key, c] of Object.entries(jsz.consumers)) {
          const lag = c.pending + c.ackPending;
          if (lag > (peaks[key] ?? 0)) peaks[key] = lag;
          peaks[key] ??= 0;
          const sum = sums[key] ?? { pending: 0, ackPending: 0 };
          sum.pending += c.pending;
          sum.ackPending += c.ackPending;
          sums[key] = sum;
        }
      } catch {
        // nats-server busy or restarting: the next poll counts
      }
      await Bun.sleep(intervalMs);
    }
  })();
  return {
    async stop(): Promise<Record<string, number>> {
      running = false;
      await loop;
      return peaks;
    },
    /** Each consumer's mean undelivered and delivered-unacked messages over the polls. */
    means(): Record<string, { pending: number; ackPending: number }> {
      const out: Record<string, { pending: number; ackPending: number }> = {};
      for (const [key, sum] of Object.entries(sums)) {
        if (sum.pending + sum.ackPending === 0) continue;
        out[key] = {
          pending: Math.round(sum.pending / Math.max(1, polls)),
          ackPending: Math.round(sum.ackPending / Math.max(1, polls)),
        };
      }
      return out;
    },
  };
}
