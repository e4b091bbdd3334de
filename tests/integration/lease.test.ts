import { expect, test } from "bun:test";
import { connect } from "@nats-io/transport-node";
import {
  createLease,
  LEASE_TTL_MS,
  openLeaseBucket,
  SIT_OUT_AFTER_FAILED_LEAD_MS,
} from "../../shared/lease/index.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

// The KV lease behind active/standby (projector, indexer): one holder at a time; a graceful stop
// hands over at once; a holder that vanishes (its connection gone, nothing released) is replaced
// after the bucket's TTL, within one standby poll.

function candidate(name: string, kv: Awaited<ReturnType<typeof openLeaseBucket>>) {
  const events: string[] = [];
  const lease = createLease({ kv, key: "work", holder: name, logger: captureLogger().logger });
  const started = lease.start({
    lead: async () => void events.push("lead"),
    standDown: async () => void events.push("standDown"),
  });
  return { lease, events, started };
}

test("one holder; a graceful stop hands over at once", async () => {
  await using nats = await startNats();
  const kv = await openLeaseBucket(nats.nc, { replicas: 1 });
  const a = candidate("a", kv);
  await a.started;
  const b = candidate("b", kv);
  await b.started;
  expect([a.lease.holding(), b.lease.holding()]).toEqual([true, false]);
  const stoppedAt = performance.now();
  await a.lease.stop();
  expect(a.events).toEqual(["lead", "standDown"]);
  await waitFor("b to take over", () => b.lease.holding(), { timeoutMs: 2_000, intervalMs: 10 });
  // Released, not expired: the next standby poll takes it.
  expect(performance.now() - stoppedAt).toBeLessThan(LEASE_TTL_MS);
  await b.lease.stop();
});

test("a holder that vanishes is replaced after the TTL, never two at once", async () => {
  await using nats = await startNats();
  const gone = await connect({ servers: nats.url });
  const a = candidate("a", await openLeaseBucket(gone, { replicas: 1 }));
  await a.started;
  const b = candidate("b", await openLeaseBucket(nats.nc, { replicas: 1 }));
  await b.started;
  expect(b.lease.holding()).toBe(false);
  await gone.close(); // a can no longer renew nor release
  await waitFor("a to stand down on its own", () => !a.lease.holding(), { timeoutMs: 5_000 });
  expect(a.events).toEqual(["lead", "standDown"]);
  await waitFor("b to take over", () => b.lease.holding(), { timeoutMs: LEASE_TTL_MS + 2_000 });
  expect(b.events).toEqual(["lead"]);
  expect(a.lease.holding()).toBe(false);
  await a.lease.stop();
  await b.lease.stop();
});

test("work that cannot start: stood down, released, and competed for again after the sit-out", async () => {
  await using nats = await startNats();
  const kv = await openLeaseBucket(nats.nc, { replicas: 1 });
  const events: string[] = [];
  let failures = 1;
  const a = createLease({ kv, key: "work", holder: "a", logger: captureLogger().logger });
  await a.start({
    lead: async () => {
      events.push("lead");
      if (failures-- > 0) throw new Error("TIMEOUT");
    },
    standDown: async () => void events.push("standDown"),
  });
  expect(a.holding()).toBe(false);
  expect(events).toEqual(["lead", "standDown"]);
  const b = candidate("b", kv);
  await b.started;
  expect(b.lease.holding()).toBe(true); // released: taken on the first try, no expiry waited for
  await b.lease.stop();
  await waitFor("a to lead again", () => a.holding(), {
    timeoutMs: SIT_OUT_AFTER_FAILED_LEAD_MS + 2_000,
  });
  expect(events).toEqual(["lead", "standDown", "lead"]);
  await a.stop();
});
