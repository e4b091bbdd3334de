/**
 * The projection runner with a throwaway read model (events counted per client) on a real
 * nats-server: two runners compete for one lease; the holder dies (its connection closes, nothing
 * released) while it holds some jobs below what it wrote; the standby takes over from the
 * model's own position; the counts never go backwards, end exact (no event counted twice, none
 * missed), and the dead holder's runner writes nothing after the takeover.
 */
import { expect, test } from "bun:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { EVENT_SUBJECT_ROOT, TOPOLOGY } from "../../shared/bus/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import {
  createLease,
  type Lease,
  type LeaseHandlers,
  openLeaseBucket,
} from "../../shared/lease/index.ts";
import {
  createProjectionRunner,
  type Fence,
  ProjectionFencedError,
  type ReadModel,
} from "../../shared/projection/index.ts";
import { startHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const CLIENTS = [
  { id: "acme", token: "acme-runner-token-0123456789" },
  { id: "beta", token: "beta-runner-token-0123456789" },
];

/**
 * What a real store gives a read model: one transaction per write (counts, per-job last
 * sequences and the position together) and an epoch claimed per writer that fences older ones.
 */
function countStore() {
  return {
    counts: new Map<string, number>(),
    jobSeq: new Map<string, number>(),
    position: 0,
    epoch: 0,
    /** Every accepted write: who wrote it and the total count after it. */
    writes: [] as { writer: string; total: number }[],
    /** Jobs folded again from their history (a redelivery among their events). */
    replays: 0,
  };
}
type CountStore = ReturnType<typeof countStore>;

interface JobCount {
  readonly clientId: string;
  /** The job's last counted sequence as stored. */
  seq: number;
  added: number;
}

/** Counts a job's events per client; a job's event at or below its stored sequence is not new. */
function countModel(store: CountStore, writer: string): ReadModel<JobCount> {
  let epoch = 0;
  const fold = (state: JobCount, _event: JobEvent, seq: number) => {
    if (seq > state.seq) {
      state.seq = seq;
      state.added++;
    }
    return state;
  };
  return {
    name: `counter ${writer}`,
    async open() {
      epoch = ++store.epoch;
    },
    resumeFrom: () => store.position + 1,
    load: async (jobs) =>
      jobs.map((job) => ({
        clientId: job.clientId,
        seq: store.jobSeq.get(job.key) ?? 0,
        added: 0,
      })),
    fold,
    // A heal replaces the fold: the job's events above its stored sequence, from its history.
    replay(state, history) {
      store.replays++;
      const fresh = { clientId: state.clientId, seq: state.seq, added: 0 };
      for (const entry of history) fold(fresh, entry.event, entry.seq);
      return fresh;
    },
    // acme's jobs are written at once; beta's wait for the linger (held, un-acked, meanwhile).
    settled: (state) => state.clientId === "acme",
    async write(batch, fence: Fence) {
      if (epoch !== store.epoch) throw new ProjectionFencedError(`${writer} was fenced`);
      expect(fence.partition).toBe(0);
      for (const job of batch.jobs) {
        const state = job.state as JobCount;
        const client = state.clientId;
        store.counts.set(client, (store.counts.get(client) ?? 0) + state.added);
        store.jobSeq.set(job.key, state.seq);
      }
      store.position = Math.max(store.position, batch.position());
      let total = 0;
      for (const n of store.counts.values()) total += n;
      store.writes.push({ writer, total });
      return batch.jobs.map(() => true);
    },
  };
}

async function runner(options: {
  readonly nc: NatsConnection;
  readonly store: CountStore;
  readonly writer: string;
  readonly lingerMs: number;
  readonly ackWaitMs?: number;
  /** Instead of a real lease on the bucket. */
  readonly lease?: Lease;
}) {
  const { nc, store, writer, lingerMs } = options;
  const logger = captureLogger().logger;
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  return createProjectionRunner({
    nc,
    js,
    jsm,
    layout: SINGLE_PARTITION_LAYOUT,
    logger,
    slot: {
      partition: 0,
      stream: SINGLE_PARTITION_LAYOUT.stream(0),
      durable: "throwaway-counter",
      filterSubject: SINGLE_PARTITION_LAYOUT.filters.all(0),
      lease:
        options.lease ??
        createLease({
          kv: await openLeaseBucket(nc, { replicas: 1 }),
          key: "throwaway-counter",
          holder: writer,
          logger,
        }),
    },
    model: countModel(store, writer),
    pace: {
      maxBatch: 20,
      lingerMs,
      roundGapMs: 5,
      ackWaitMs: options.ackWaitMs ?? 30_000,
      backoffMs: { first: 50, max: 500 },
    },
  });
}

test("a standby runner takes over a dead holder's lease; the model never goes backwards and counts each event once", async () => {
  await using nats = await startNats();
  await using hub = await startHub({
    nats,
    services: ["ingress", "executor"],
    clients: CLIENTS.map((c) => ({ ...c, routes: ["demo.*"] })),
  });
  const { jsm } = hub.running.hub;
  const submit = async (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const client = CLIENTS[i % 2] as (typeof CLIENTS)[number];
      const body = { request_id: `r-${i}`, route: "demo.echo", input: "x" };
      expect((await hub.run(body, client.token)).status).toBeLessThan(300);
    }
  };
  /** Every event in the stream, per client: what the counts must end at. */
  const eventsPerClient = async () => {
    const counts = new Map<string, number>();
    for (const c of CLIENTS) {
      const info = await jsm.streams.info(TOPOLOGY.eventsStream, {
        subjects_filter: `${EVENT_SUBJECT_ROOT}.${c.id}.>`,
      });
      counts.set(
        c.id,
        Object.values(info.state.subjects ?? {}).reduce((x, y) => x + y, 0),
      );
    }
    return counts;
  };
  const countedAll = async () => {
    const expected = await eventsPerClient();
    return CLIENTS.every((c) => store.counts.get(c.id) === expected.get(c.id));
  };

  const store = countStore();
  const ncA = await connect({ servers: nats.url });
  const ncB = await connect({ servers: nats.url });
  // a holds beta's jobs past the test's end: it dies holding them, below its last write.
  const a = await runner({ nc: ncA, store, writer: "a", lingerMs: 60_000 });
  await a.start();
  const b = await runner({ nc: ncB, store, writer: "b", lingerMs: 30 });
  await b.start();
  await submit(0, 40);
  await waitFor("a to count acme's events", () => (store.counts.get("acme") ?? 0) >= 20);
  expect(store.counts.get("beta")).toBeUndefined();
  expect(new Set(store.writes.map((w) => w.writer))).toEqual(new Set(["a"]));

  await ncA.close(); // a dies holding beta's jobs: nothing released, its lease expires
  await submit(40, 80);
  await waitFor("b to take over and count every event", countedAll, { timeoutMs: 20_000 });
  await b.stop();
  await a.stop().catch(() => undefined);
  await ncB.close();

  // Once b wrote, a never did again (its lease lapsed, and the store's epoch fences it).
  const firstOfB = store.writes.findIndex((w) => w.writer === "b");
  expect(firstOfB).toBeGreaterThan(0);
  expect(store.writes.slice(firstOfB).every((w) => w.writer === "b")).toBe(true);
  // Never backwards: each write's total is at least the one before.
  const totals = store.writes.map((w) => w.total);
  expect(totals).toEqual([...totals].sort((x, y) => x - y));
  expect(store.counts).toEqual(await eventsPerClient());
  expect([...store.counts.values()].reduce((x, y) => x + y, 0)).toBeGreaterThanOrEqual(160);
}, 60_000);

test("a job held past the ack wait comes again redelivered: it is folded from its history, counted once", async () => {
  await using nats = await startNats();
  await using hub = await startHub({
    nats,
    services: ["ingress", "executor"],
    clients: CLIENTS.map((c) => ({ ...c, routes: ["demo.*"] })),
  });
  const client = CLIENTS[1] as (typeof CLIENTS)[number]; // beta: held for the whole linger
  for (let i = 0; i < 10; i++) {
    const body = { request_id: `h-${i}`, route: "demo.echo", input: "x" };
    expect((await hub.run(body, client.token)).status).toBeLessThan(300);
  }
  const { jsm } = hub.running.hub;
  const events = async () => {
    const info = await jsm.streams.info(TOPOLOGY.eventsStream, {
      subjects_filter: `${EVENT_SUBJECT_ROOT}.${client.id}.>`,
    });
    return Object.values(info.state.subjects ?? {}).reduce((x, y) => x + y, 0);
  };
  await waitFor("every job done in the stream", async () => (await events()) === 20);
  const store = countStore();
  const nc = await connect({ servers: nats.url });
  // Held for 5 s, un-acked, while the server redelivers after 300 ms.
  const only = await runner({ nc, store, writer: "only", lingerMs: 5_000, ackWaitMs: 300 });
  await only.start();
  await waitFor("every event counted", () => store.counts.get(client.id) === 20, {
    timeoutMs: 4_000,
  });
  await only.stop();
  await nc.close();
  expect(store.replays).toBeGreaterThan(0);
  expect(store.counts.get(client.id)).toBe(20);
  expect(store.position).toBe((await jsm.streams.info(TOPOLOGY.eventsStream)).state.last_seq);
}, 30_000);

/** A lease the test decides: it leads at start and holds while `holds` says so. */
function decidedLease() {
  const state = { holds: true, handlers: undefined as LeaseHandlers | undefined };
  const lease: Lease = {
    async start(handlers) {
      state.handlers = handlers;
      // As a real lease competes again after a failed lead: the other holder may be recreating
      // the durable (it saw this one delete it) while this one takes it.
      await handlers.lead().catch(() => Bun.sleep(200).then(handlers.lead));
    },
    holding: () => state.holds,
    async stop() {},
  };
  return { state, lease };
}

test("two holders of one lease (a claim both won): the holder fenced by the loser leads again; counts end exact", async () => {
  await using nats = await startNats();
  await using hub = await startHub({
    nats,
    services: ["ingress", "executor"],
    clients: CLIENTS.map((c) => ({ ...c, routes: ["demo.*"] })),
  });
  const acme = CLIENTS[0] as (typeof CLIENTS)[number];
  const { jsm } = hub.running.hub;
  const submit = async (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const body = { request_id: `d-${i}`, route: "demo.echo", input: "x" };
      expect((await hub.run(body, acme.token)).status).toBeLessThan(300);
    }
  };
  const events = async () => {
    const info = await jsm.streams.info(TOPOLOGY.eventsStream, {
      subjects_filter: `${EVENT_SUBJECT_ROOT}.${acme.id}.>`,
    });
    return Object.values(info.state.subjects ?? {}).reduce((x, y) => x + y, 0);
  };
  const store = countStore();
  const ncA = await connect({ servers: nats.url });
  const ncB = await connect({ servers: nats.url });
  const winner = decidedLease();
  const loser = decidedLease();
  const a = await runner({ nc: ncA, store, writer: "a", lingerMs: 30, lease: winner.lease });
  await a.start();
  await submit(0, 10);
  await waitFor("a to count", () => (store.counts.get(acme.id) ?? 0) > 0);
  // b won the same claim (nats-server before 2.9.21 lets two compare-and-sets through): it opens
  // the store (fencing a), then sees the claim is a's and stands down.
  const b = await runner({ nc: ncB, store, writer: "b", lingerMs: 30, lease: loser.lease });
  await b.start();
  loser.state.holds = false;
  await loser.state.handlers?.standDown();
  const stoodDownAt = store.writes.length;
  await submit(10, 30);
  // a's next write is fenced; it still holds the lease, so it leads again and counts the rest.
  await waitFor("every event counted", async () => store.counts.get(acme.id) === (await events()), {
    timeoutMs: 15_000,
  });
  expect(store.writes.slice(stoodDownAt).every((w) => w.writer === "a")).toBe(true);
  const totals = store.writes.map((w) => w.total);
  expect(totals).toEqual([...totals].sort((x, y) => x - y));
  await a.stop();
  await b.stop();
  await ncA.close();
  await ncB.close();
}, 30_000);
