import { expect, test } from "bun:test";
import type { KV } from "@nats-io/kv";
import {
  createSharedRateLimiter,
  openRateBucket,
} from "../../services/ingress/shared-rate-limit.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";

// Three ingress replicas (in this process, each with its own HTTP server and limiter, one NATS)
// share one budget per client in KV. The burst is a minute's worth, so a test that only bursts
// cannot tell a limiter that refills from one that never does: this one spends the burst, lets
// every leased token lapse, and then offers three times the refill rate for several seconds. What
// the replicas admit together, in that window and over the whole run, stays within 10% of the
// budget: the bucket's tokens at the window's start (read from KV) plus rate × elapsed time, both
// measured. Everything beyond it is 429 with Retry-After.

const PER_MINUTE = 1_200; // a burst of 1,200, then 20 per second
const RATE_PER_SECOND = PER_MINUTE / 60;
/** Leased tokens lapse this long after their lease (shared-rate-limit.ts, `leaseMs`). */
const LEASE_MS = 2_000;
const CLIENT = { id: "acme", token: "acme-token-0123456789abcdef", runsPerMinute: PER_MINUTE };

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly code?: unknown;
}

let requests = 0;
async function submit(hub: TestHub): Promise<Answer> {
  const res = await hub.run(
    { request_id: `rl-${requests++}`, route: "demo.echo", input: "x" },
    CLIENT.token,
  );
  const body = (await res.json()) as { code?: unknown };
  return { status: res.status, retryAfter: res.headers.get("retry-after"), code: body.code };
}

/** The client's shared bucket as KV holds it now, refilled to `at` the way a lease computes it. */
async function bucketTokens(kv: KV, at: number): Promise<number> {
  const entry = await kv.get(`client.${CLIENT.id}`);
  if (entry?.operation !== "PUT") throw new Error("the client has no shared bucket");
  const stored = entry.json() as { tokens: number; at: number };
  return Math.min(PER_MINUTE, stored.tokens + (Math.max(0, at - stored.at) * PER_MINUTE) / 60_000);
}

test("three ingress replicas admit the burst plus the refill, not 3×; 429 with Retry-After beyond", async () => {
  await using nats = await startNats();
  const hubs: TestHub[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      hubs.push(await startHub({ nats, services: ["ingress"], clients: [CLIENT] }));
    }
    const answers: Answer[] = [];
    const started = Date.now();
    // The burst: 24 callers spread over the replicas until each has been refused once.
    await Promise.all(
      Array.from({ length: 24 }, async (_, n) => {
        for (;;) {
          const answer = await submit(hubs[n % 3] as TestHub);
          answers.push(answer);
          if (answer.status !== 202) return;
        }
      }),
    );
    const burstAdmitted = answers.filter((a) => a.status === 202).length;
    expect(burstAdmitted).toBeGreaterThanOrEqual(PER_MINUTE);
    // Not a race being waited out: every token a replica leased and did not spend is gone after
    // this, so the window below starts with nothing but the shared bucket.
    await Bun.sleep(LEASE_MS + 500);

    const kv = await openRateBucket(nats.nc, { replicas: 1 });
    const windowStart = Date.now();
    const tokensAtStart = await bucketTokens(kv, windowStart);
    const steady: Answer[] = [];
    // Three times the refill: each replica gets one request every 50 ms, for 6 s.
    await Promise.all(
      hubs.map(async (hub) => {
        while (Date.now() - windowStart < 6_000) {
          const sent = Date.now();
          steady.push(await submit(hub));
          await Bun.sleep(Math.max(0, 50 - (Date.now() - sent)));
        }
      }),
    );
    const windowEnd = Date.now();
    const admitted = steady.filter((a) => a.status === 202).length;
    const budget = tokensAtStart + (RATE_PER_SECOND * (windowEnd - windowStart)) / 1000;
    const total = burstAdmitted + admitted;
    const whole = PER_MINUTE + (RATE_PER_SECOND * (windowEnd - started)) / 1000;
    process.stderr.write(
      `shared rate limit: ${admitted} admitted in the window for a budget of ${budget.toFixed(1)} (${tokensAtStart.toFixed(1)} at its start), ${total} in all for ${whole.toFixed(1)}\n`,
    );
    // A limiter that never refilled would admit only the tokens at the start (about 50 of ~170).
    expect(admitted).toBeLessThanOrEqual(budget + 1);
    expect(admitted).toBeGreaterThanOrEqual(budget * 0.9);
    expect(steady.length).toBeGreaterThan(budget * 2);

    // The whole run: the burst plus everything that refilled since the first request.
    expect(total).toBeLessThanOrEqual(whole + 1);
    expect(total).toBeGreaterThanOrEqual(whole * 0.9);

    // Every refusal is a 429 problem with the seconds until the next token (under 1 s at 20/s).
    const refused = [...answers, ...steady].filter((a) => a.status !== 202);
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused.map((a) => `${a.status} ${a.code} ${a.retryAfter}`))).toEqual(
      new Set(["429 rate_limited 1"]),
    );
    // The shared budget answered throughout: no replica fell back to limiting on its own.
    for (const hub of hubs) expect(hub.logs()).not.toContain("shared rate budget unreachable");
  } finally {
    for (const hub of hubs) await hub.stop();
  }
}, 60_000);

test("when the shared budget cannot be reached, a replica limits on its own (fails open)", async () => {
  const nats = await startNats();
  const kv = await openRateBucket(nats.nc, { replicas: 1 });
  const { logger, logs } = captureLogger();
  const limiter = createSharedRateLimiter({ kv, clock: systemClock, logger, timeoutMs: 50 });
  await nats.kill();
  // Its own bucket: a minute's worth of burst, then refusals with a wait.
  const waits = await Promise.all(Array.from({ length: 12 }, () => limiter.take("client:b", 10)));
  expect(waits.filter((w) => w === 0)).toHaveLength(10);
  expect(waits.filter((w) => w > 0)).toHaveLength(2);
  expect(logs()).toContain("shared rate budget unreachable");
  await nats.stop();
});

test("while NATS is known to be away, a replica limits on its own at once, without waiting", async () => {
  const nats = await startNats();
  const kv = await openRateBucket(nats.nc, { replicas: 1 });
  const { logger, logs } = captureLogger();
  let up = true;
  const limiter = createSharedRateLimiter({
    kv,
    clock: systemClock,
    logger,
    timeoutMs: 5_000,
    connected: () => up,
  });
  expect(await limiter.take("client:c", 600)).toBe(0); // a lease from the shared bucket
  await nats.kill();
  up = false;
  const started = performance.now();
  // The lease's 6 tokens are spent first; then its own bucket, without a 5 s wait per refill.
  const waits = await Promise.all(Array.from({ length: 20 }, () => limiter.take("client:c", 600)));
  expect(performance.now() - started).toBeLessThan(1_000);
  expect(waits.every((w) => w === 0)).toBe(true);
  expect(logs()).toContain("NATS is disconnected");
  await nats.stop();
});
