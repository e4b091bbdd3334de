import { expect, test } from "bun:test";
import {
  createSharedRateLimiter,
  openRateBucket,
} from "../../services/ingress/shared-rate-limit.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";

// Three ingress replicas' limiters share one budget in KV: however the requests spread over them,
// the total admitted stays within 10% of the client's limit (burst plus refill), not 3× it.

test("three replicas admit the client's limit together, not each", async () => {
  await using nats = await startNats();
  const kv = await openRateBucket(nats.nc, { replicas: 1 });
  const { logger } = captureLogger();
  const replicas = [0, 1, 2].map(() => createSharedRateLimiter({ kv, clock: systemClock, logger }));
  const perMinute = 600; // 10 per second, a burst of 600
  const started = Date.now();
  let admitted = 0;
  let refused = 0;
  let n = 0;
  // 3 s of 300 requests/s spread round-robin over the replicas.
  while (Date.now() - started < 3_000) {
    const batch = await Promise.all(
      Array.from({ length: 30 }, () => replicas[n++ % 3]?.take("client:acme", perMinute)),
    );
    for (const wait of batch) wait === 0 ? admitted++ : refused++;
    await Bun.sleep(100);
  }
  const seconds = (Date.now() - started) / 1000;
  const budget = perMinute + (perMinute / 60) * seconds;
  expect(admitted).toBeLessThanOrEqual(budget * 1.1);
  expect(admitted).toBeGreaterThanOrEqual(budget * 0.9);
  expect(refused).toBeGreaterThan(0);
});

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
