/**
 * The projection runner on partition claims, on a real nats-server: a throwaway read model
 * (events counted per partition) over 4 partitions (here one client's subjects each, on the one
 * events stream), 3 members each running 4 runners with `slot.lease = claims.lease("counter", p)`. A member
 * dies holding partitions (its connection closes, nothing released); the others fold them again.
 * Per partition the count never goes backwards and ends exact, and the dead member writes
 * nothing once another has.
 */
import { expect, test } from "bun:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { EVENT_SUBJECT_ROOT, TOPOLOGY } from "../../shared/bus/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import {
  createPartitionClaims,
  LEASE_TTL_MS,
  openClaimsBucket,
  openLeaseBucket,
  type PartitionClaims,
} from "../../shared/lease/index.ts";
import {
  createProjectionRunner,
  ProjectionFencedError,
  type ProjectionRunner,
  type ReadModel,
} from "../../shared/projection/index.ts";
import { startHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const CLIENTS = ["p0", "p1", "p2", "p3"].map((id) => ({
  id,
  token: `${id}-claims-runner-token-0123456789`,
}));
const P = CLIENTS.length;

/** One partition's store: one transaction per write, an epoch claimed per writer. */
function partitionStore() {
  return {
    count: 0,
    jobSeq: new Map<string, number>(),
    position: 0,
    epoch: 0,
    writes: [] as { writer: string; total: number }[],
  };
}
type PartitionStore = ReturnType<typeof partitionStore>;

interface JobCount {
  seq: number;
  added: number;
}

function countModel(store: PartitionStore, writer: string, partition: number): ReadModel<JobCount> {
  let epoch = 0;
  const fold = (state: JobCount, _event: unknown, seq: number) => {
    if (seq > state.seq) {
      state.seq = seq;
      state.added++;
    }
    return state;
  };
  return {
    name: `counter ${writer} p${partition}`,
    async open() {
      epoch = ++store.epoch;
    },
    resumeFrom: () => store.position + 1,
    load: async (jobs) => jobs.map((job) => ({ seq: store.jobSeq.get(job.key) ?? 0, added: 0 })),
    fold,
    replay(state, history) {
      const fresh = { seq: state.seq, added: 0 };
      for (const entry of history) fold(fresh, entry.event, entry.seq);
      return fresh;
    },
    settled: () => true,
    async write(batch, fence) {
      if (epoch !== store.epoch) throw new ProjectionFencedError(`${writer} was fenced`);
      expect(fence.partition).toBe(partition);
      for (const job of batch.jobs) {
        store.count += job.state.added;
        store.jobSeq.set(job.key, job.state.seq);
      }
      store.position = Math.max(store.position, batch.position());
      store.writes.push({ writer, total: store.count });
      return batch.jobs.map(() => true);
    },
  };
}

interface Member {
  readonly nc: NatsConnection;
  readonly claims: PartitionClaims;
  readonly runners: ProjectionRunner[];
}

async function member(url: string, writer: string, stores: PartitionStore[]): Promise<Member> {
  const nc = await connect({ servers: url, name: writer });
  const logger = captureLogger().logger;
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const claims = createPartitionClaims({
    leases: await openLeaseBucket(nc, { replicas: 1 }),
    jsm: await jetstreamManager(nc),
    claims: await openClaimsBucket(nc, { replicas: 1 }),
    groups: { counter: P },
    holder: writer,
    logger,
  });
  const runners = stores.map((store, partition) =>
    createProjectionRunner({
      nc,
      js,
      jsm,
      layout: SINGLE_PARTITION_LAYOUT,
      logger,
      slot: {
        partition,
        stream: SINGLE_PARTITION_LAYOUT.stream(0),
        durable: `throwaway-counter-p${partition}`,
        filterSubject: `${EVENT_SUBJECT_ROOT}.${CLIENTS[partition]?.id}.>`,
        lease: claims.lease("counter", partition),
      },
      model: countModel(store, writer, partition),
      pace: {
        maxBatch: 20,
        lingerMs: 30,
        roundGapMs: 5,
        ackWaitMs: 30_000,
        backoffMs: { first: 50, max: 500 },
      },
    }),
  );
  for (const runner of runners) await runner.start();
  return { nc, claims, runners };
}

test("three members fold 4 partitions; one dies; counts stay exact and never go backwards", async () => {
  await using nats = await startNats();
  await using hub = await startHub({
    nats,
    services: ["ingress", "executor"],
    clients: CLIENTS.map((c) => ({ ...c, routes: ["demo.*"] })),
  });
  const { jsm } = hub.running.hub;
  const submit = async (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const client = CLIENTS[i % P] as (typeof CLIENTS)[number];
      const body = { request_id: `r-${i}`, route: "demo.echo", input: "x" };
      expect((await hub.run(body, client.token)).status).toBeLessThan(300);
    }
  };
  const eventsOf = async (partition: number) => {
    const info = await jsm.streams.info(TOPOLOGY.eventsStream, {
      subjects_filter: `${EVENT_SUBJECT_ROOT}.${CLIENTS[partition]?.id}.>`,
    });
    return Object.values(info.state.subjects ?? {}).reduce((x, y) => x + y, 0);
  };
  const stores = CLIENTS.map(() => partitionStore());
  const countedAll = async () => {
    for (let p = 0; p < P; p++) if (stores[p]?.count !== (await eventsOf(p))) return false;
    return true;
  };

  const a = await member(nats.url, "a", stores);
  const b = await member(nats.url, "b", stores);
  const c = await member(nats.url, "c", stores);
  const members = { a, b, c };
  await waitFor(
    "a, b and c to share the 4 partitions",
    () => Object.values(members).every((m) => m.claims.held("counter").length >= 1),
    { timeoutMs: 20_000 },
  );
  await submit(0, 40);
  await waitFor("every event counted", countedAll, { timeoutMs: 20_000 });

  const ofB = b.claims.held("counter");
  expect(ofB.length).toBeGreaterThan(0);
  const writesBeforeKill = stores.map((s) => s.writes.length);
  await b.nc.close(); // b dies holding its partitions: nothing released
  await submit(40, 80);
  await waitFor(
    "a and c to take b's partitions",
    () => a.claims.held("counter").length + c.claims.held("counter").length === P,
    { timeoutMs: LEASE_TTL_MS + 2_000 },
  );
  await waitFor("every event counted after b died", countedAll, { timeoutMs: 20_000 });

  for (const m of [a, c]) for (const runner of m.runners) await runner.stop();
  for (const runner of b.runners) await runner.stop().catch(() => undefined);
  await a.nc.close();
  await c.nc.close();

  for (const [p, store] of stores.entries()) {
    // Never backwards: each write's total is at least the one before.
    const totals = store.writes.map((w) => w.total);
    expect(totals).toEqual([...totals].sort((x, y) => x - y));
    expect(store.count).toBe(await eventsOf(p));
    if (ofB.includes(p)) {
      // Once another member wrote b's partition after the kill, b never did again.
      const after = store.writes.slice(writesBeforeKill[p]);
      const taken = after.findIndex((w) => w.writer !== "b");
      expect(taken).toBeGreaterThanOrEqual(0);
      expect(after.slice(taken).every((w) => w.writer !== "b")).toBe(true);
    }
  }
  expect(stores.reduce((n, s) => n + s.count, 0)).toBeGreaterThanOrEqual(160);
}, 90_000);
