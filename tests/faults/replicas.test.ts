import { expect, test } from "bun:test";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { readLastEvent, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { startNats } from "../helpers/nats.ts";
import { startNatsCluster } from "../helpers/nats-cluster.ts";
import { waitFor } from "../helpers/wait.ts";
import { countingServer, exactlyOnceProblems, Load, waitJobEvents } from "./checks.ts";
import { FAULT_CLIENT, faultYaml, hubProcs, type ProcName } from "./procs.ts";

// Several replicas of every service as separate processes against one nats-server: three
// ingress, two executors, two callback services, two projectors (one active). An HTTP executor
// and a callback receiver count what they get. Under load every service is restarted in turn
// (SIGTERM, as a rolling update does): no accepted run is lost or duplicated, no job is sent to
// the executor twice, no callback twice, and every view equals the fold of its events.

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const REPLICAS: ProcName[] = [
  "projector",
  "projector#2",
  "indexer",
  "indexer#2",
  "executor",
  "executor#2",
  "callback",
  "callback#2",
  "ingress",
  "ingress#2",
  "ingress#3",
];

async function rollingRestart(
  nats: { readonly url: string; readonly nc: NatsConnection },
  replicas = 1,
) {
  const executor = countingServer(() => Response.json({ output: "ok" }));
  const receiver = countingServer(() => new Response(null, { status: 204 }));
  const yaml = faultYaml({
    natsUrl: nats.url,
    nats: { replicas },
    routes: `
  - key: f.http
    concurrency: 8
    executor: { kind: http, url: "${executor.url}/task", secret: "${SECRET}" }
`,
  });
  await using procs = await hubProcs(yaml, nats.url);
  for (const name of REPLICAS) await procs.start(name);
  const ingresses = REPLICAS.filter((r) => r.startsWith("ingress"));
  let next = 0;
  const base = () => procs.urlOf(ingresses[next++ % ingresses.length] as ProcName);
  const load = new Load(base, (request_id, n) => ({
    request_id,
    route: n % 2 === 0 ? "f.http" : "f.echo",
    input: request_id,
    ...(n % 3 === 0 ? { callback_url: `${receiver.url}/cb` } : {}),
  }));
  load.start(12);
  await waitFor("load before the restarts", () => load.accepted.size >= 300, { timeoutMs: 20_000 });
  for (const name of REPLICAS) {
    const before = load.accepted.size;
    await procs.kill(name, "SIGTERM");
    await procs.start(name);
    await waitFor(`load after restarting ${name}`, () => load.accepted.size >= before + 60, {
      timeoutMs: 30_000,
    });
  }
  await load.stop();
  expect(load.unexpected).toEqual([]);
  await load.settle();

  const jsm = await jetstreamManager(nats.nc);
  const jobIds = load.jobIds();
  await waitJobEvents(jsm, jobIds);
  expect(await exactlyOnceProblems(jsm, jobIds)).toEqual([]);
  // Each job reached the executor once (a graceful restart lets attempts finish) …
  const httpJobs = [...load.accepted.entries()].filter(
    ([rid]) => Number(rid.split("-").at(-1)) % 2 === 0,
  );
  const posted = httpJobs.map(([, id]) => executor.seen.get(id) ?? 0);
  expect(posted.filter((n) => n !== 1)).toEqual([]);
  // … and every callback was delivered once.
  const cbJobs = [...load.accepted.entries()].filter(
    ([rid]) => Number(rid.split("-").at(-1)) % 3 === 0,
  );
  await waitFor("every callback", () => cbJobs.every(([, id]) => receiver.seen.has(`msg_${id}`)), {
    timeoutMs: 30_000,
  });
  expect(cbJobs.map(([, id]) => receiver.seen.get(`msg_${id}`)).filter((n) => n !== 1)).toEqual([]);

  // Every view and index row equals the fold of its job's events: what `audit verify` checks.
  await waitFor(
    "the projector and the indexer to apply every event",
    async () => {
      for (const durable of ["projector", "index"]) {
        const info = await jsm.consumers.info("SWITCHYARD_EVENTS", durable);
        if (info.num_pending > 0 || info.num_ack_pending > 0) return false;
      }
      return true;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  await Bun.sleep(300); // the projector's linger
  // In the services' folder: the config's index path is relative, so this checks the index they
  // wrote too (from another folder it would find no index, or a stray one).
  const verify = Bun.spawnSync([process.execPath, MAIN, "audit", "verify"], {
    cwd: procs.dir,
    env: { ...process.env, SWITCHYARD_CONFIG: procs.configPath, NATS_URL: nats.url },
  });
  expect(verify.stderr.toString()).toBe("");
  expect(verify.exitCode).toBe(0);
  executor.stop();
  receiver.stop();
}

test("three ingress, two of every other service: a rolling restart under load loses and repeats nothing", async () => {
  await using nats = await startNats();
  await rollingRestart(nats);
}, 240_000);

test("the same rolling restart on a three-node cluster (R3 streams and buckets)", async () => {
  await using cluster = await startNatsCluster({ size: 3 });
  const nc = await connect({ servers: [...cluster.urls] });
  try {
    await rollingRestart({ url: cluster.urls.join(","), nc }, 3);
  } finally {
    await nc.close();
  }
}, 360_000);

async function deadlineOwnerDies(
  nats: { readonly url: string; readonly nc: NatsConnection },
  replicas = 1,
) {
  const yaml = faultYaml({
    natsUrl: nats.url,
    nats: { replicas },
    routes: `
  - key: f.nats
    deadline: 5s
    executor: { kind: nats }
`,
  });
  await using procs = await hubProcs(yaml, nats.url);
  // One executor alone hands every job over, so every timer is the one it sets: the stream holds
  // no timer before it starts and 40 once it has taken the 40 jobs.
  for (const name of ["projector", "executor", "ingress"] as const) await procs.start(name);
  const jsm = await jetstreamManager(nats.nc);
  expect((await jsm.streams.info("SWITCHYARD_DEADLINES")).state.messages).toBe(0);
  const load = new Load(procs.url, (request_id) => ({ request_id, route: "f.nats", input: "x" }));
  for (let i = 0; i < 40; i++) await load.submit(`dl-${i}`);
  expect(load.accepted.size).toBe(40);
  await waitFor("every timer to be set", async () => {
    const info = await jsm.streams.info("SWITCHYARD_DEADLINES");
    return info.state.messages === 40;
  });
  // A second executor joins, then the one that set the timers dies before any is due. (A job
  // whose hand-over a crash interrupts is handed over again after the admission's ack wait, with
  // its timer then: tests/executor/executor-crash.test.ts.)
  await procs.start("executor#2");
  await procs.kill("executor");
  const endedBeforeKill = await Promise.all(
    load
      .jobIds()
      .map((id) =>
        readLastEvent(
          { jsm: jsm, layout: SINGLE_PARTITION_LAYOUT },
          { client_id: FAULT_CLIENT.id, job_id: id },
          "job",
        ),
      ),
  );
  expect(endedBeforeKill.filter((e) => e?.event.type !== "job.dispatched")).toEqual([]);
  const ends = await waitFor(
    "every job to reach its deadline",
    async () => {
      const list = await Promise.all(
        load.jobIds().map(async (id) => ({
          run: await readLastEvent(
            { jsm: jsm, layout: SINGLE_PARTITION_LAYOUT },
            { client_id: FAULT_CLIENT.id, job_id: id },
            "run",
          ),
          last: await readLastEvent(
            { jsm: jsm, layout: SINGLE_PARTITION_LAYOUT },
            { client_id: FAULT_CLIENT.id, job_id: id },
            "job",
          ),
        })),
      );
      return list.every((e) => e.last?.event.type === "job.error") ? list : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 250 },
  );
  for (const { run, last } of ends) {
    expect(last?.event.data).toMatchObject({ code: "deadline_exceeded" });
    const late =
      Date.parse(last?.event.occurred_at ?? "") - Date.parse(run?.event.occurred_at ?? "") - 5_000;
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(1_500);
  }
  // Once: the `.job` subject holds job.dispatched and one job.error per job.
  expect(await exactlyOnceProblems(jsm, load.jobIds(), 2)).toEqual([]);
}

test("a deadline that falls due while the executor that set it is dead still fires, once", async () => {
  await using nats = await startNats();
  await deadlineOwnerDies(nats);
}, 120_000);

test("the same on a three-node cluster (R3 timers)", async () => {
  await using cluster = await startNatsCluster({ size: 3 });
  const nc = await connect({ servers: [...cluster.urls] });
  try {
    await deadlineOwnerDies({ url: cluster.urls.join(","), nc }, 3);
  } finally {
    await nc.close();
  }
}, 180_000);

test("three ingress processes share one client's rate limit, not three", async () => {
  await using nats = await startNats();
  const perMinute = 120; // a burst of 120, then 2 per second
  await using procs = await hubProcs(
    faultYaml({ natsUrl: nats.url, runsPerMinute: perMinute }),
    nats.url,
  );
  const ingresses: ProcName[] = ["ingress", "ingress#2", "ingress#3"];
  for (const name of ingresses) await procs.start(name);
  const started = Date.now();
  const statuses = await Promise.all(
    Array.from({ length: 360 }, async (_, n) => {
      const res = await fetch(`${procs.urlOf(ingresses[n % 3] as ProcName)}/run`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${FAULT_CLIENT.token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ request_id: `rl-${n}`, route: "f.echo", input: "x" }),
      });
      const retryAfter = Number(res.headers.get("retry-after"));
      await res.arrayBuffer();
      return { status: res.status, retryAfter };
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  const admitted = statuses.filter((s) => s.status === 202).length;
  const refused = statuses.filter((s) => s.status === 429);
  expect(admitted + refused.length).toBe(360);
  // One budget: the burst plus what refilled meanwhile. Leased tokens have left the shared
  // bucket, so nothing beyond it; per-replica buckets would have admitted all 360.
  expect(admitted).toBeGreaterThanOrEqual(perMinute);
  expect(admitted).toBeLessThanOrEqual(perMinute + Math.ceil((perMinute / 60) * seconds));
  expect(refused.every((s) => s.retryAfter >= 1)).toBe(true);
}, 60_000);
