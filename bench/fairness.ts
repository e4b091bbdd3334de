#!/usr/bin/env bun
/**
 * Callback fairness as a figure: `bun bench/fairness.ts`. One receiver that hangs must not slow
 * callbacks to a healthy one: at 1,000 jobs/s, half of them calling back each, the goal is the
 * healthy receiver's p99 submit → callback within 20% of a run without the hung one, where that
 * half goes to a second healthy receiver instead. The load is the same in both runs, so the
 * comparison isolates the hang: on two cores the hub's p99 at 1,000 jobs/s is set by CPU
 * (measured: 21 ms at 500 jobs/s alone, 165 ms at 1,000 jobs/s to two healthy receivers, 36 ms
 * beside a hung one, whose callbacks never complete and cost less). Prints one JSON line; exits 1
 * when the goal is missed. The correctness side (no healthy callback waits behind the hung
 * receiver's) is tests/callbacks/fairness.test.ts.
 */
import { FAULT_CLIENT, faultYaml, hubProcs, startAllServices } from "../tests/faults/procs.ts";
import { startNats } from "../tests/helpers/nats.ts";
import { waitFor } from "../tests/helpers/wait.ts";

const RATE = 1_000;
const SECONDS = 8;

interface Receiver {
  readonly url: string;
  readonly arrived: Map<string, number>;
  stop(): void;
}

/** Records when each job's callback arrived (performance.now()), answering 200 at once. */
function healthyReceiver(): Receiver {
  const arrived = new Map<string, number>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      // webhook-id is msg_<job_id>: no body parsing, so the receiver costs the machine little.
      arrived.set((req.headers.get("webhook-id") ?? "").slice(4), performance.now());
      return new Response(null, { status: 204 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}/cb`, arrived, stop: () => server.stop(true) };
}

/** Accepts every callback and never answers. */
function hungReceiver(): Receiver {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: () => new Promise<Response>(() => {}),
  });
  return {
    url: `http://127.0.0.1:${server.port}/cb`,
    arrived: new Map(),
    stop: () => server.stop(true),
  };
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? Number.NaN;
}

/**
 * RATE jobs/s for SECONDS, open loop: even slots call back `healthy`, odd ones `other` (or send
 * nothing without one).
 */
async function phase(input: {
  base: string;
  label: string;
  healthy: Receiver;
  other?: Receiver;
  seconds?: number;
}): Promise<{ latencies: number[]; sentAt: Map<string, number> }> {
  const sentAt = new Map<string, number>();
  const total = RATE * (input.seconds ?? SECONDS);
  const started = performance.now();
  let n = 0;
  const workers = Array.from({ length: 64 }, async () => {
    while (n < total) {
      const i = n++;
      const due = started + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await Bun.sleep(wait);
      const target = i % 2 === 0 ? input.healthy : input.other;
      if (target === undefined) continue;
      const sent = performance.now();
      const res = await fetch(`${input.base}/run`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${FAULT_CLIENT.token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({
          request_id: `${input.label}-${i}`,
          route: "f.echo",
          input: "x",
          callback_url: target.url,
        }),
      });
      const { job_id } = (await res.json()) as { job_id: string };
      if (res.status !== 202) throw new Error(`POST /run answered ${res.status}`);
      if (i % 2 === 0) sentAt.set(job_id, sent);
    }
  });
  await Promise.all(workers);
  await waitFor(
    `${input.label}: every callback to the healthy receiver`,
    () => [...sentAt.keys()].every((id) => input.healthy.arrived.has(id)),
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  const latencies = [...sentAt].map(([id, at]) => (input.healthy.arrived.get(id) ?? at) - at);
  return { latencies, sentAt };
}

const GOAL_RATIO = 1.2;

async function main(): Promise<number> {
  await using nats = await startNats();
  const yaml = faultYaml({ natsUrl: nats.url, logLevel: "warn", callbacks: { timeout: "10s" } });
  await using procs = await hubProcs(yaml, nats.url);
  await startAllServices(procs);
  const healthy = healthyReceiver();
  const second = healthyReceiver();
  const hung = hungReceiver();
  try {
    const base = procs.url();
    // Warm every process up first, so neither measured run pays for JIT and connection set-up.
    await phase({ base, label: "warm-up", healthy, seconds: 2 });
    const baseline = await phase({ base, label: "beside-healthy", healthy, other: second });
    const withHung = await phase({ base, label: "beside-hung", healthy, other: hung });
    const before = p99(baseline.latencies);
    const after = p99(withHung.latencies);
    const ratio = after / before;
    console.log(
      JSON.stringify({
        scenario: "callback-fairness",
        rate_jobs_per_s: RATE,
        seconds: SECONDS,
        healthy_p99_ms_beside_healthy: Math.round(before * 10) / 10,
        healthy_p99_ms_beside_hung: Math.round(after * 10) / 10,
        ratio: Math.round(ratio * 100) / 100,
        goal_ratio: GOAL_RATIO,
        met: ratio <= GOAL_RATIO,
      }),
    );
    return ratio <= GOAL_RATIO ? 0 : 1;
  } finally {
    healthy.stop();
    second.stop();
    hung.stop();
  }
}

process.exit(await main());
