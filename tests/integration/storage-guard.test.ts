import { describe, expect, test } from "bun:test";
import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { createStorageGuard } from "../../services/ingress/storage-guard.ts";
import { ensureTopology, TOPOLOGY } from "../../shared/bus/index.ts";
import { manualClock } from "../../shared/clock/index.ts";
import { createEventLayout, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";

// The ingress's storage guard against a real events stream (services/ingress/storage-guard.ts):
// it refuses new runs from 90% of events_max_bytes, from the stream's own state, and reads that
// state cheaply: far from the limit at most once a second (the clock here is manual), near it for
// every run, and once refusing again only after a second.

const LIMIT = 100_000;
const RUN = 1_000;

/** The real manager, counting its stream info reads. */
function countingInfo(jsm: JetStreamManager) {
  let reads = 0;
  const info = jsm.streams.info.bind(jsm.streams);
  jsm.streams.info = (...args: Parameters<typeof info>) => {
    reads++;
    return info(...args);
  };
  return { jsm, reads: () => reads };
}

async function setUp(nats: TestNats) {
  const jsm = await jetstreamManager(nats.nc);
  await ensureTopology(nats.nc, jsm, {
    replicas: 1,
    eventsMaxAgeMs: 3_600_000,
    duplicateWindowMs: 120_000,
    eventsMaxBytes: LIMIT,
    partitions: 1,
    layoutOf: createEventLayout,
  });
  const js = jetstream(nats.nc);
  /** Stores `count` events of 900 bytes of data (about 1,000 stored); returns the last seq. */
  const fill = async (count: number) => {
    let seq = 0;
    for (let i = 0; i < count; i++) {
      const ack = await js.publish(`sy.evt.fill.j${crypto.randomUUID()}.job`, new Uint8Array(900));
      seq = ack.seq;
    }
    return seq;
  };
  const counted = countingInfo(await jetstreamManager(nats.nc));
  const clock = manualClock("2026-11-26T12:00:00Z");
  const guard = createStorageGuard({
    layout: SINGLE_PARTITION_LAYOUT,
    jsm: counted.jsm,
    maxBytes: LIMIT,
    clock,
  });
  return { jsm, fill, guard, clock, reads: counted.reads };
}

describe("the storage guard", () => {
  test("far from the limit: one read of the stream's state per second, whatever the runs", async () => {
    await using nats = await startNats();
    const { fill, guard, clock, reads } = await setUp(nats);
    await fill(10);
    for (let i = 0; i < 50; i++) {
      expect(await guard.admits(RUN)).toBe(true);
      guard.done(RUN, await fill(1));
    }
    expect(reads()).toBe(1);
    clock.advance(1_000);
    expect(await guard.admits(RUN)).toBe(true);
    guard.done(RUN);
    expect(reads()).toBe(2);
  });

  test("runs are refused before the stream holds 90% of the limit, counting what the acks show", async () => {
    await using nats = await startNats();
    const { jsm, fill, guard, reads } = await setUp(nats);
    let admitted = 0;
    for (;;) {
      if (!(await guard.admits(RUN))) break;
      admitted++;
      guard.done(RUN, await fill(1));
    }
    const { state } = await jsm.streams.info(TOPOLOGY.eventsStream);
    // Every admitted run fitted below the runs' share with its own size, and the next would not.
    expect(state.bytes).toBeLessThan(LIMIT * 0.9);
    expect(state.bytes + RUN).toBeGreaterThanOrEqual(LIMIT * 0.9);
    expect(admitted).toBe(state.messages);
    // Near the limit each run read the state: more reads than the one far from it.
    expect(reads()).toBeGreaterThan(1);
  });

  test("runs admitted at once count against each other; once refusing, the state is read again only after a second", async () => {
    await using nats = await startNats();
    const { fill, guard, clock, reads } = await setUp(nats);
    await fill(80); // about 80% of the limit: the last 10% before the runs' share
    const answers = await Promise.all(Array.from({ length: 20 }, () => guard.admits(RUN)));
    const admitted = answers.filter(Boolean).length;
    // Room for about 10 runs of 1,000 bytes below 90 KB: not all 20 that asked together.
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThan(20);
    for (let i = 0; i < admitted; i++) guard.done(RUN, await fill(1));
    const refusedAt = reads();
    expect(await guard.admits(RUN)).toBe(false);
    const afterFirstRefusal = reads();
    expect(afterFirstRefusal).toBeLessThanOrEqual(refusedAt + 1);
    for (let i = 0; i < 20; i++) expect(await guard.admits(RUN)).toBe(false);
    expect(reads()).toBe(afterFirstRefusal);
    clock.advance(1_000);
    expect(await guard.admits(RUN)).toBe(false);
    expect(reads()).toBe(afterFirstRefusal + 1);
  });

  test("several partitions: the fullest stream decides, and sequences of other streams do not inflate the estimate", async () => {
    await using nats = await startNats();
    const jsm = await jetstreamManager(nats.nc);
    const layout = createEventLayout(2);
    await ensureTopology(nats.nc, jsm, {
      replicas: 1,
      eventsMaxAgeMs: 3_600_000,
      duplicateWindowMs: 120_000,
      eventsMaxBytes: LIMIT,
      partitions: 2,
      layoutOf: createEventLayout,
    });
    const js = jetstream(nats.nc);
    // Partition 1's stream holds far more messages (higher sequences) than partition 0's.
    let seq1 = 0;
    for (let i = 0; i < 40; i++) {
      seq1 = (await js.publish(`sy.evt.p1.fill.j${i}.job`, new Uint8Array(900))).seq;
    }
    await js.publish("sy.evt.p0.fill.j0.job", new Uint8Array(100));
    const clock = manualClock("2026-11-26T12:00:00Z");
    const guard = createStorageGuard({ jsm, maxBytes: LIMIT, clock, layout });
    expect(await guard.admits(RUN)).toBe(true);
    // A run stored at partition 1's sequence: with one stream's sequences the estimate would
    // count every message between as grown.
    guard.done(RUN, seq1 + 10_000);
    expect(await guard.admits(RUN)).toBe(true);
    guard.done(RUN);
    // The fullest stream (partition 1, about 40 kB) is what is checked: 50 more runs fill it.
    for (let i = 0; i < 60; i++) {
      await js.publish(`sy.evt.p1.fill.k${i}.job`, new Uint8Array(900));
    }
    clock.advance(1_000);
    expect(await guard.admits(RUN)).toBe(false);
  });

  test("no limit: nothing is read", async () => {
    await using nats = await startNats();
    const counted = countingInfo(await jetstreamManager(nats.nc));
    const guard = createStorageGuard({
      layout: SINGLE_PARTITION_LAYOUT,
      jsm: counted.jsm,
      maxBytes: -1,
      clock: manualClock(0),
    });
    expect(await guard.admits(RUN)).toBe(true);
    expect(counted.reads()).toBe(0);
  });
});
