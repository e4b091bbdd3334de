/**
 * Partition claims on a real nats-server: members sharing P partitions each end with a fair
 * share, stay put while nothing changes, take a dead member's partitions after its record
 * expires and a stopped member's at once; no two members ever report holding one partition.
 * At rest a member writes its member record once a second and nothing per partition.
 */
import { expect, test } from "bun:test";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  CLAIMS_BUCKET,
  createPartitionClaims,
  LEASE_BUCKET,
  LEASE_TTL_MS,
  type Lease,
  openClaimsBucket,
  openLeaseBucket,
  type PartitionClaims,
} from "../../shared/lease/index.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";
import { freePort } from "../helpers/nats-cluster.ts";
import { waitFor } from "../helpers/wait.ts";

interface Member {
  readonly name: string;
  readonly nc: NatsConnection;
  readonly claims: PartitionClaims;
  readonly leases: Lease[];
  /** lead/standDown per partition, in order. */
  readonly events: string[];
}

async function member(url: string, name: string, partitions: number): Promise<Member> {
  const nc = await connect({ servers: url, name });
  const logger = captureLogger().logger;
  const claims = createPartitionClaims({
    leases: await openLeaseBucket(nc, { replicas: 1 }),
    jsm: await jetstreamManager(nc),
    claims: await openClaimsBucket(nc, { replicas: 1 }),
    groups: { counter: partitions },
    holder: name,
    logger,
  });
  const events: string[] = [];
  const leases = [...Array(partitions).keys()].map((p) => claims.lease("counter", p));
  for (const [p, lease] of leases.entries()) {
    await lease.start({
      lead: async () => void events.push(`lead ${p}`),
      standDown: async () => void events.push(`standDown ${p}`),
    });
  }
  return { name, nc, claims, leases, events };
}

/** Samples holding() of every member every few ms; records any partition held by two. */
function watchOverlaps(members: () => readonly Member[], partitions: number) {
  const overlaps: string[] = [];
  let samples = 0;
  const timer = setInterval(() => {
    samples++;
    for (let p = 0; p < partitions; p++) {
      const holders = members().filter((m) => m.leases[p]?.holding());
      if (holders.length > 1) overlaps.push(`p${p}: ${holders.map((m) => m.name).join(",")}`);
    }
  }, 5);
  return { overlaps, samples: () => samples, stop: () => clearInterval(timer) };
}

const counts = (members: readonly Member[]) => members.map((m) => m.claims.held("counter").length);

test("three members share 4 partitions fairly, stay put at rest, and take over from a dead and a stopped one", async () => {
  await using nats = await startNats();
  const jsm = await jetstreamManager(nats.nc);
  const members: Member[] = [];
  const sampler = watchOverlaps(() => members, 4);

  const a = await member(nats.url, "a", 4);
  members.push(a);
  await waitFor("a to claim all 4", () => a.claims.held("counter").length === 4);

  members.push(await member(nats.url, "b", 4), await member(nats.url, "c", 4));
  const [, b, c] = members as [Member, Member, Member];
  await waitFor(
    "each of a, b, c to hold 1 or 2 of the 4",
    () => {
      const n = counts(members);
      return n.every((x) => x >= 1 && x <= 2) && n.reduce((x, y) => x + y) === 4;
    },
    { timeoutMs: 20_000 },
  );

  // A quiet window of several renewals: no claim is written, nobody's share moves.
  const shares = members.map((m) => m.claims.held("counter"));
  const claimsBefore = (await jsm.streams.info(`KV_${CLAIMS_BUCKET}`)).state.last_seq;
  await Bun.sleep(5_000);
  expect(members.map((m) => m.claims.held("counter"))).toEqual(shares);
  expect((await jsm.streams.info(`KV_${CLAIMS_BUCKET}`)).state.last_seq).toBe(claimsBefore);

  // b dies (its connection closes, nothing released): a and c fold its partitions after its
  // member record expires.
  const ofB = b.claims.held("counter");
  await b.nc.close();
  await waitFor(
    "a and c to hold all 4 after b died",
    () => a.claims.held("counter").length + c.claims.held("counter").length === 4,
    { timeoutMs: LEASE_TTL_MS + 2_000 },
  );
  expect(b.claims.held("counter")).toEqual([]);
  expect(b.events.filter((e) => e.startsWith("standDown")).sort()).toEqual(
    ofB.map((p) => `standDown ${p}`).sort(),
  );

  // c stops cleanly: its claims are released and a takes them before any record would expire.
  const stoppedAt = performance.now();
  await c.claims.stop();
  await waitFor("a to hold all 4 after c stopped", () => a.claims.held("counter").length === 4, {
    timeoutMs: LEASE_TTL_MS,
    intervalMs: 10,
  });
  expect(performance.now() - stoppedAt).toBeLessThan(LEASE_TTL_MS);

  sampler.stop();
  expect(sampler.samples()).toBeGreaterThan(100);
  expect(sampler.overlaps).toEqual([]);
  await a.claims.stop();
  await b.claims.stop();
  await a.nc.close();
  await c.nc.close();
}, 60_000);

test("a member stopping hands every partition over and deletes its member record", async () => {
  await using nats = await startNats();
  const a = await member(nats.url, "a", 2);
  await waitFor("a to claim both", () => a.claims.held("counter").length === 2);
  const b = await member(nats.url, "b", 2);
  await a.claims.stop();
  expect(a.events.sort()).toEqual(["lead 0", "lead 1", "standDown 0", "standDown 1"]);
  await waitFor("b to claim both", () => b.claims.held("counter").length === 2, {
    timeoutMs: 2_000,
  });
  // a's two watches took their consumers with them: only b's remain, one in each bucket.
  const jsm = await jetstreamManager(nats.nc);
  expect(await watchConsumers(jsm)).toEqual([1, 1]);
  const leases = await openLeaseBucket(nats.nc, { replicas: 1 });
  const keys: string[] = [];
  for await (const key of await leases.keys("members.>")) keys.push(key);
  expect(keys).toHaveLength(1); // b's own; a's was deleted, not left to expire
  const listed = await watchConsumers(jsm); // with the listing's own (keys()), left to expire
  await b.claims.stop();
  expect(await watchConsumers(jsm)).toEqual(listed.map((n) => n - 1)); // b's two are gone
  await a.nc.close();
  await b.nc.close();
});

/** How many consumers the claims and the lease buckets' streams hold: the watches'. */
async function watchConsumers(jsm: JetStreamManager): Promise<number[]> {
  const count = async (bucket: string) =>
    (await jsm.streams.info(`KV_${bucket}`)).state.consumer_count;
  return [await count(CLAIMS_BUCKET), await count(LEASE_BUCKET)];
}

test("a claim naming a live member that does not hold it is freed, and the partition taken again", async () => {
  await using nats = await startNats();
  const a = await member(nats.url, "a", 2);
  await waitFor("a to claim both", () => a.claims.held("counter").length === 2);
  const b = await member(nats.url, "b", 2);
  await waitFor("a fair share", () => counts([a, b]).join() === "1,1", { timeoutMs: 10_000 });
  const [pa] = a.claims.held("counter");
  const [pb] = b.claims.held("counter");
  // What a release left when its write failed (the store away during a leader change): b's
  // partition's claim names a, which does not hold it. b stands down on seeing it.
  const claimsKv = await openClaimsBucket(nats.nc, { replicas: 1 });
  const ofA = (await claimsKv.get(`counter.p${pa}`))?.json<{ owner: string }>();
  const seen = (await claimsKv.get(`counter.p${pb}`))?.json<{ epoch: number }>();
  await claimsKv.put(
    `counter.p${pb}`,
    JSON.stringify({ owner: ofA?.owner, holder: "a", epoch: (seen?.epoch ?? 0) + 1 }),
  );
  await waitFor("b to stand down", () => b.events.includes(`standDown ${pb}`));
  // a frees the claim it does not hold, and a member takes the partition again.
  await waitFor(
    `partition ${pb} held again`,
    () => a.leases[pb as number]?.holding() === true || b.leases[pb as number]?.holding() === true,
    { timeoutMs: 5_000 },
  );
  await a.claims.stop();
  await b.claims.stop();
  await a.nc.close();
  await b.nc.close();
}, 30_000);

/**
 * One process's claims for co-located read models: two groups behind one member record; it
 * starts the leases of `running` (both groups unless told).
 */
async function colocated(
  url: string,
  name: string,
  partitions: number,
  running: readonly string[] = ["projector", "indexer"],
) {
  const nc = await connect({ servers: url, name });
  const claims = createPartitionClaims({
    leases: await openLeaseBucket(nc, { replicas: 1 }),
    jsm: await jetstreamManager(nc),
    claims: await openClaimsBucket(nc, { replicas: 1 }),
    groups: { projector: partitions, indexer: partitions },
    holder: name,
    logger: captureLogger().logger,
  });
  for (const group of running) {
    for (let p = 0; p < partitions; p++) {
      await claims.lease(group, p).start({ lead: async () => {}, standDown: async () => {} });
    }
  }
  return { nc, claims };
}

test("co-located groups share one member record and each group is shared fairly", async () => {
  await using nats = await startNats();
  const a = await colocated(nats.url, "a", 4);
  const b = await colocated(nats.url, "b", 4);
  const fair = () =>
    ["projector", "indexer"].every(
      (g) => a.claims.held(g).length === 2 && b.claims.held(g).length === 2,
    );
  await waitFor("a and b to hold 2 of each group", fair, { timeoutMs: 20_000 });
  const leases = await openLeaseBucket(nats.nc, { replicas: 1 });
  let keys: string[] = [];
  // One member record per process, not per group. Waited for: a renewal that timed out on a
  // loaded machine makes its process join again under a new id, and the old record lives out
  // its TTL.
  await waitFor("one member record per process", async () => {
    keys = [];
    for await (const key of await leases.keys()) keys.push(key);
    return keys.length === 2;
  });
  expect(keys.every((k) => k.startsWith("members."))).toBe(true);

  // c runs only an indexer: it takes a share of the indexer's partitions and none of the
  // projector's, and a and b, not counting it there, keep 2 projector partitions each.
  const c = await colocated(nats.url, "c", 4, ["indexer"]);
  await waitFor(
    "the indexer's 4 shared by a, b and c, 1 or 2 each",
    () => {
      const n = [a, b, c].map((m) => m.claims.held("indexer").length);
      return n.every((x) => x >= 1 && x <= 2) && n.reduce((x, y) => x + y) === 4;
    },
    { timeoutMs: 20_000 },
  );
  // Longer than the stability window a release waits for: a and b would have given one up by then.
  await Bun.sleep(6_000);
  expect(c.claims.held("projector")).toEqual([]);
  expect([a, b].map((m) => m.claims.held("projector").length)).toEqual([2, 2]);
  for (const m of [a, b, c]) {
    await m.claims.stop();
    await m.nc.close();
  }
}, 40_000);

test("at rest, two groups of 16 partitions cost one member renewal a second and no JetStream API call", async () => {
  const monitorPort = await freePort();
  await using nats = await startNats({ args: ["-m", String(monitorPort)] });
  const jsm = await jetstreamManager(nats.nc);
  const a = await colocated(nats.url, "a", 16);
  await waitFor("a to claim all 16 of each group", () =>
    ["projector", "indexer"].every((g) => a.claims.held(g).length === 16),
  );
  await Bun.sleep(3_000); // past the stability window: nothing is pending

  const read = async () => {
    const jsz = (await (await fetch(`http://127.0.0.1:${monitorPort}/jsz`)).json()) as {
      api: { total: number };
    };
    const stored = async (bucket: string) =>
      (await jsm.streams.info(`KV_${bucket}`)).state.last_seq;
    return {
      api: jsz.api.total,
      leases: await stored(LEASE_BUCKET),
      claims: await stored(CLAIMS_BUCKET),
    };
  };
  const before = await read();
  const cpuBefore = process.cpuUsage();
  const windowMs = 10_000;
  await Bun.sleep(windowMs);
  const cpu = process.cpuUsage(cpuBefore);
  const after = await read();
  const renewals = after.leases - before.leases;
  // The two stream infos of `read` itself are the only API calls in the window.
  expect(after.api - before.api).toBe(2);
  expect(after.claims - before.claims).toBe(0);
  expect(renewals).toBeGreaterThanOrEqual(1);
  expect(renewals).toBeLessThanOrEqual(windowMs / 1_000 + 1);
  console.log(
    `idle, 2 groups x 16 partitions, one process: ${renewals} KV writes in ${windowMs} ms, ` +
      `${after.api - before.api - 2} API calls, ` +
      `${((cpu.user + cpu.system) / (windowMs * 1_000)).toFixed(4)} cores (this process)`,
  );
  await a.claims.stop();
  await a.nc.close();
}, 40_000);
