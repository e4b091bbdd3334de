/**
 * The benchmark's JetStream cost counters against a real nats-server (with its monitoring port):
 * what the server's own counters say must match what the test did.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import {
  createJetStreamMonitor,
  diffSnapshots,
  type JetStreamMonitor,
  type JetStreamSnapshot,
  monitorPort,
  perUnit,
  undrained,
} from "../../bench/lib/jetstream.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

let nats: TestNats;
let monitor: JetStreamMonitor;

beforeAll(async () => {
  nats = await startNats({ args: ["-m", "-1"] });
  const port = monitorPort(nats.server().output());
  if (!port) throw new Error(`no monitor port in:\n${nats.server().output()}`);
  monitor = createJetStreamMonitor(`http://127.0.0.1:${port}`);
});

afterAll(async () => {
  await nats.stop();
});

describe("JetStream cost counters", () => {
  test("stored, publishes, deliveries, acks, pulls, direct gets and API calls per stream and consumer", async () => {
    const jsm = await jetstreamManager(nats.nc);
    const js = jetstream(nats.nc);
    await jsm.streams.add({ name: "S", subjects: ["s.>"], allow_direct: true });
    await jsm.consumers.add("S", { durable_name: "c1", ack_policy: AckPolicy.Explicit });
    const kv = await new Kvm(nats.nc).create("b");
    const before = await monitor.snapshot();

    for (let i = 0; i < 10; i++) await js.publish(`s.${i}`, "x", { msgID: `m${i}` });
    const dup = await js.publish("s.0", "x", { msgID: "m0" });
    expect(dup.duplicate).toBe(true);
    await kv.put("k", "v");
    await kv.get("k");
    await jsm.streams.getMessage("S", { last_by_subj: "s.1" });

    const consumer = await js.consumers.get("S", "c1");
    const batch = await consumer.fetch({ max_messages: 10, expires: 2_000 });
    let seen = 0;
    for await (const m of batch) {
      if (m.seq % 2 === 0) m.ack();
      else m.nak();
      if (++seen === 10) break;
    }
    await nats.nc.flush();
    const mid = await waitFor("ack-pending 5", async () => {
      const s = await monitor.snapshot();
      return s.jsz.consumers["S/c1"]?.ackPending === 5 ? s : undefined;
    });
    expect(undrained(mid.jsz)).toEqual([{ consumer: "S/c1", pending: 0, ackPending: 5 }]);

    // The five naked messages come back; ack them all.
    const again = await consumer.fetch({ max_messages: 5, expires: 2_000 });
    let redelivered = 0;
    for await (const m of again) {
      m.ack();
      if (++redelivered === 5) break;
    }
    await nats.nc.flush();
    const after = await waitFor("drained", async () => {
      const s = await monitor.snapshot();
      return undrained(s.jsz).length === 0 ? s : undefined;
    });

    const cost = diffSnapshots(before, after);
    expect(cost.streams.S).toMatchObject({ stored: 10, publishes: 11, directGets: 0 });
    expect(cost.streams.KV_b).toMatchObject({ stored: 1, publishes: 1, directGets: 1 });
    expect(cost.streams.S?.bytes).toBeGreaterThan(0);
    expect(cost.consumers["S/c1"]).toEqual({ deliveries: 15, acks: 15, pulls: 2 });
    expect(cost.totals).toMatchObject({
      stored: 11,
      storedStreams: 10,
      storedKv: 1,
      deliveries: 15,
      acks: 15,
      directGets: 1,
      pulls: 2,
    });
    // STREAM.MSG.GET (last by subject) and the consumer lookup are API calls; direct gets and
    // pull requests are not.
    expect(cost.totals.apiCalls).toBeGreaterThanOrEqual(1);
    // /varz: at least the 11 publishes, 1 put, 15 acks or naks and 2 pull requests came in, and
    // the 15 deliveries and 12 PubAcks went out; the bytes at least the 10 bodies each way.
    expect(cost.totals.messagesIn).toBeGreaterThanOrEqual(11 + 1 + 15 + 2);
    expect(cost.totals.messagesOut).toBeGreaterThanOrEqual(15 + 12);
    expect(cost.totals.bytesIn).toBeGreaterThan(10);
    expect(cost.totals.bytesOut).toBeGreaterThan(15);
    expect(perUnit(cost, 5).deliveries).toBe(3);
  });

  test("a watch whose process is gone holds no backlog", async () => {
    const kv = await new Kvm(nats.nc).create("watched");
    const other = await connect({ servers: nats.url });
    const watch = await new Kvm(other).open("watched").then((b) => b.watch());
    await other.close();
    // The gone watcher's consumer lives on (nats.js's 5-min inactive threshold), and a put made
    // once the server has seen the connection go stays pending on it: the drain must not wait
    // for it. Put until one is (a put the server handles before the close is delivered).
    const stale = await waitFor("the gone watcher's pending put", async () => {
      await kv.put("k", "v");
      const s = await monitor.snapshot();
      const c = Object.values(s.jsz.consumers).find((c) => c.stream === "KV_watched");
      return c !== undefined && c.pending > 0 ? s : undefined;
    });
    const watcher = Object.values(stale.jsz.consumers).find((c) => c.stream === "KV_watched");
    expect(watcher).toMatchObject({ acks: false, ackPending: 0 });
    expect(undrained(stale.jsz)).toEqual([]);
    watch.stop();
  });

  test("a consumer made again counts from zero", () => {
    const snap = (delivered: number, acks: number): JetStreamSnapshot => ({
      jsz: {
        apiTotal: 0,
        apiErrors: 0,
        streams: {},
        consumers: {
          "S/c": { stream: "S", name: "c", delivered, pending: 0, ackPending: 0, acks: true },
        },
      },
      subs: { "$JS.ACK.S.c.*.*.*.*.*": acks },
      traffic: { inMsgs: 0, outMsgs: 0, inBytes: 0, outBytes: 0 },
    });
    expect(diffSnapshots(snap(100, 100), snap(7, 6)).consumers["S/c"]).toEqual({
      deliveries: 7,
      acks: 6,
      pulls: 0,
    });
    expect(diffSnapshots(snap(100, 100), snap(107, 106)).consumers["S/c"]).toEqual({
      deliveries: 7,
      acks: 6,
      pulls: 0,
    });
  });
});
