import type { JetStreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { runToEnd } from "./run.ts";
import { waitFor } from "./wait.ts";

const MAIN = new URL("../../services/cli/main.ts", import.meta.url).pathname;

/** What one `switchyard audit verify` run printed. */
export interface AuditRun {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `switchyard audit verify` against the hub's NATS, as an operator would. Without a config
 * file (none in the test's folder, SWITCHYARD_CONFIG unset) it checks the job views and the
 * stream; the search index, a separate writer with its own lease, is left out.
 */
export async function auditVerify(natsUrl: string): Promise<AuditRun> {
  const { SWITCHYARD_CONFIG: _ignored, ...env } = process.env;
  const run = await runToEnd([process.execPath, MAIN, "audit", "verify"], {
    env: { ...env, NATS_URL: natsUrl },
  });
  return { exitCode: run.code, stdout: run.stdout, stderr: run.stderr };
}

/**
 * Every view equals the fold of its job's events (none lost, stale or out of order): waits for the
 * projector's durable to have applied and acknowledged every event, then runs `audit verify`,
 * which replays the whole stream with the projector's `transition` and compares each view field by
 * field. Returns the last run, so the caller asserts on it and a failure shows the divergences.
 *
 * A run is repeated while it diverges, for a bounded time: on an R3 cluster `audit verify` reads
 * views with direct gets, which a follower a few milliseconds behind the bucket's leader may
 * answer. A real divergence does not heal once the load has stopped (no event is left to fold),
 * so it still fails.
 */
export async function viewsMatchFold(options: {
  readonly jsm: JetStreamManager;
  readonly natsUrl: string;
  readonly timeoutMs?: number;
}): Promise<AuditRun> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  await waitFor(
    "the projector to apply and acknowledge every event",
    async () => {
      const info = await options.jsm.consumers.info(
        TOPOLOGY.eventsStream,
        TOPOLOGY.consumers.projector,
      );
      return info.num_pending === 0 && info.num_ack_pending === 0;
    },
    { timeoutMs, intervalMs: 100 },
  );
  let last: AuditRun = { exitCode: -1, stdout: "", stderr: "not run" };
  await waitFor(
    "audit verify to find every view equal to the fold of its events",
    async () => {
      last = await auditVerify(options.natsUrl);
      return last.exitCode === 0;
    },
    { timeoutMs, intervalMs: 500 },
  ).catch(() => undefined);
  return last;
}
