import { expect, test } from "bun:test";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import {
  decodeEvent,
  type LeaderPlacement,
  leaderLimit,
  leadersPerNode,
  readPlacement,
} from "../../shared/bus/index.ts";
import { createEventLayout } from "../../shared/jobs/index.ts";
import { startNatsCluster } from "../helpers/nats-cluster.ts";
import { createTestDatabase } from "../helpers/postgres.ts";
import { waitFor } from "../helpers/wait.ts";
import { countingServer, Load } from "./checks.ts";
import { FAULT_CLIENT, faultYaml, getJob, hubProcs, type ProcName, pool } from "./procs.ts";

// Issue 27's cluster test: P = 4 on a three-node R3 cluster, every service replicated as separate
// processes (3 ingress, 3 projectors, 3 indexers on one PostgreSQL index, 2 executors, 2 callback
// services). The store is created by the first process, which spreads the partition streams'
// leaders over the nodes. 5,000 runs at a paced rate (an HTTP executor and a callback receiver
// count what they get); mid-load one projector, one indexer and one nats-server node are SIGKILLed
// (the node restarted). Every accepted run ends done in GET and in GET /jobs, executed once and
// called back once; `audit verify` (views, chains and the index) finds nothing; no answer is a 5xx
// other than 503 with Retry-After.

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const P = 4;
const RUNS = 5_000;
const REPLICAS: ProcName[] = [
  "ingress",
  "ingress#2",
  "ingress#3",
  "projector",
  "projector#2",
  "projector#3",
  "indexer",
  "indexer#2",
  "indexer#3",
  "executor",
  "executor#2",
  "callback",
  "callback#2",
];

/** The lines a process logged at warn (40) or above, the last 40. */
function printWarnings(name: string, output: string): void {
  const lines = output
    .split("\n")
    .filter((line) => /"level":(4|5|6)0/.test(line) || line.startsWith("---"));
  if (lines.length === 0) return;
  process.stderr.write(`--- ${name}: ${lines.length} lines at warn or above, the last 40\n`);
  process.stderr.write(`${lines.slice(-40).join("\n")}\n`);
}

/** Every job of the fault client in GET /jobs, paged to the end: job id → status. */
async function listed(base: string): Promise<Map<string, string>> {
  const jobs = new Map<string, string>();
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
    const res = await fetch(`${base}/jobs?limit=500${query}`, {
      headers: { authorization: `Bearer ${FAULT_CLIENT.token}` },
    });
    if (res.status !== 200) throw new Error(`GET /jobs answered ${res.status}`);
    const page = (await res.json()) as {
      jobs: { job_id: string; status: string }[];
      next_cursor: string | null;
    };
    for (const job of page.jobs) jobs.set(job.job_id, job.status);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return jobs;
}

test("P = 4 on a three-node R3 cluster, every service replicated: a projector, an indexer and a node SIGKILLed under 5,000 runs", async () => {
  const startedAt = performance.now();
  await using cluster = await startNatsCluster({ size: 3 });
  await using db = await createTestDatabase("sy_cluster");
  const natsUrl = cluster.urls.join(",");
  const nc = await connect({ servers: [...cluster.urls] });
  const executor = countingServer(() => Response.json({ output: "ok" }));
  const receiver = countingServer(() => new Response(null, { status: 204 }));
  const yaml = faultYaml({
    natsUrl,
    nats: { replicas: 3, partitions: P },
    logLevel: "warn",
    routes: `
  - key: f.http
    concurrency: 32
    executor: { kind: http, url: "${executor.url}/task", secret: "${SECRET}" }
`,
    extra: `index: { backend: postgres, postgres_url: "${db.url}", linger: 50ms }`,
  });
  await using procs = await hubProcs(yaml, natsUrl);
  let passed = false;
  try {
    // The first process creates the store and spreads the partition leaders; the rest join, one
    // at a time (thirteen creating their consumers at once time out on a loaded R3 cluster).
    for (const name of REPLICAS) await procs.start(name);
    const startedAllAt = performance.now();
    const layout = createEventLayout(P);
    const jsm = await jetstreamManager(nc);
    /** callback.delivered events on one `.cb` subject. */
    const deliveries = async (stream: string, subject: string) => {
      let count = 0;
      for (let seq = 1; ; ) {
        const msg = await jsm.direct.getMessage(stream, { seq, next_by_subj: subject });
        if (msg === null) return count;
        if (decodeEvent(msg.data).type === "callback.delivered") count++;
        seq = msg.seq + 1;
      }
    };
    const placement = await readPlacement(jsm, layout.streams());
    const leaders = new Set(placement?.leaders.values());
    process.stderr.write(
      `cluster partitions: leaders ${JSON.stringify(Object.fromEntries(placement?.leaders ?? []))}\n`,
    );
    expect(leaders.size).toBeGreaterThanOrEqual(2);
    expect(leaders.has("")).toBe(false);
    // No node leads more than ceil(P/N) = 2: what the placement guarantees, not luck.
    expect(Math.max(...leadersPerNode(placement as LeaderPlacement).values())).toBeLessThanOrEqual(
      leaderLimit(P, 3),
    );

    const ingresses = REPLICAS.filter((r) => r.startsWith("ingress"));
    let next = 0;
    const base = () => procs.urlOf(ingresses[next++ % ingresses.length] as ProcName);
    const load = new Load(base, (request_id) => ({
      request_id,
      route: "f.http",
      input: request_id,
      callback_url: `${receiver.url}/cb`,
    }));
    // Paced: at most 10 workers × one run per 100 ms.
    load.start(10, 100);
    await waitFor("load before the kills", () => load.accepted.size >= RUNS * 0.3, {
      timeoutMs: 60_000,
    });
    await procs.kill("projector#2");
    await procs.kill("indexer#2");
    const node = 1;
    await cluster.kill(node, "SIGKILL");
    process.stderr.write(
      `cluster partitions: killed projector#2, indexer#2 and ${cluster.nodes[node]?.name} at ${load.accepted.size} accepted\n`,
    );
    await waitFor("load with the node down", () => load.accepted.size >= RUNS * 0.6, {
      timeoutMs: 60_000,
    });
    await cluster.restart(node);
    await waitFor("every run submitted", () => load.accepted.size >= RUNS, { timeoutMs: 90_000 });
    await load.stop();
    await load.settle();
    const loadDoneAt = performance.now();
    expect(load.unexpected).toEqual([]);
    expect(load.refusals.filter((r) => !r.headers.get("retry-after"))).toEqual([]);
    const jobIds = load.jobIds();

    // Once each: one run.requested and one job.done per job, and no job nobody was told about.
    // Read once every accepted run has its final event: the executors of the partitions the
    // killed node led resume only once their consumers have new leaders, so at the end of the
    // load up to some seconds of runs can still be waiting for their executor.
    const wanted = new Set(jobIds);
    const subjectsOf = async (kind: "run" | "job") => {
      const counts = new Map<string, number>();
      for (let p = 0; p < P; p++) {
        const info = await jsm.streams.info(layout.stream(p), {
          subjects_filter: `${layout.eventRoot(p)}.${FAULT_CLIENT.id}.*.${kind}`,
        });
        for (const [subject, n] of Object.entries(info.state.subjects ?? {})) {
          counts.set(subject.split(".").at(-2) ?? "", n);
        }
      }
      return counts;
    };
    const runs = await subjectsOf("run");
    const finals = await waitFor(
      "every accepted run's final event",
      async () => {
        const got = await subjectsOf("job");
        return jobIds.every((id) => got.has(id)) && got;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    const problems: string[] = [];
    for (const [kind, counts] of [
      ["run", runs],
      ["job", finals],
    ] as const) {
      for (const [id, n] of counts) {
        if (!wanted.has(id)) problems.push(`${id}: stored but never acknowledged`);
        if (n !== 1) problems.push(`${id}: ${n} events on .${kind}`);
      }
    }
    for (const id of jobIds) if (!runs.has(id)) problems.push(`${id}: no run.requested`);
    expect(problems).toEqual([]);
    await waitFor(
      "every job executed and called back",
      () => jobIds.every((id) => executor.seen.has(id) && receiver.seen.has(`msg_${id}`)),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    // Called back once, as the hub records it: one callback.delivered per job.
    await waitFor(
      "one callback.delivered recorded per job",
      async () => {
        let recorded = 0;
        for (let p = 0; p < P; p++) {
          const info = await jsm.streams.info(layout.stream(p), {
            subjects_filter: `${layout.eventRoot(p)}.${FAULT_CLIENT.id}.*.cb`,
          });
          for (const [subject, n] of Object.entries(info.state.subjects ?? {})) {
            // More than one event: attempts before the delivery; still one delivery.
            const delivered = n === 1 ? 1 : await deliveries(layout.stream(p), subject);
            if (delivered > 1) problems.push(`${subject}: ${delivered} callback.delivered`);
            if (delivered === 1) recorded++;
          }
        }
        return recorded === jobIds.length || problems.length > 0;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(problems).toEqual([]);
    // A POST or a callback whose answer was lost with the node is sent again (docs/executors.md,
    // "A task can arrive more than once"): the receivers deduplicate on webhook-id.
    const postedAgain = jobIds.filter((id) => (executor.seen.get(id) ?? 0) > 1).length;
    const calledAgain = jobIds.filter((id) => (receiver.seen.get(`msg_${id}`) ?? 0) > 1).length;

    const notDone: string[] = [];
    await waitFor(
      "every job done through GET",
      async () => {
        notDone.length = 0;
        await pool(jobIds, 16, async (id) => {
          const res = await getJob(base(), id);
          if (res.body.status !== "done") notDone.push(id);
        });
        return notDone.length === 0;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    ).catch(() => undefined);
    expect(notDone).toEqual([]);
    let unlisted: string[] = [];
    await waitFor(
      "every job done in GET /jobs",
      async () => {
        const list = await listed(base());
        unlisted = jobIds.filter((id) => list.get(id) !== "done");
        return unlisted.length === 0;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    ).catch(() => undefined);
    expect(unlisted).toEqual([]);

    // GET answers from the stream while a view is missing, so it does not show a projector that
    // lags: after the node's death a partition whose projector durable's leader was on it folds
    // nothing until nats.js pulls again, after two missed idle heartbeats (docs/deploy.md).
    const caughtUpFrom = performance.now();
    await waitFor(
      "every partition's projector durable acknowledged to the end",
      async () => {
        for (let p = 0; p < P; p++) {
          const info = await jsm.consumers.info(layout.stream(p), "projector");
          if (info.num_pending > 0 || info.num_ack_pending > 0) return false;
        }
        return true;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    const caughtUpSec = Math.round((performance.now() - caughtUpFrom) / 1000);
    // Views, hash chains and index rows all equal the fold of the events.
    const verify = Bun.spawnSync([process.execPath, MAIN, "audit", "verify"], {
      cwd: procs.dir,
      env: { ...process.env, SWITCHYARD_CONFIG: procs.configPath, NATS_URL: natsUrl },
    });
    const out = verify.stdout.toString();
    if (verify.exitCode !== 0)
      process.stderr.write(`cluster partitions: audit verify said\n${out}`);
    expect(verify.stderr.toString()).toBe("");
    expect(out.match(/ 0 divergences/g)?.length ?? 0).toBeGreaterThanOrEqual(P);
    expect(verify.exitCode).toBe(0);
    process.stderr.write(
      `cluster partitions: ${jobIds.length} runs, processes up ${Math.round((startedAllAt - startedAt) / 1000)} s, load done ${Math.round((loadDoneAt - startedAt) / 1000)} s, whole test ${Math.round((performance.now() - startedAt) / 1000)} s, 503s seen ${load.refusals.length}, POSTs repeated ${postedAgain}, callbacks repeated ${calledAgain}, views caught up ${caughtUpSec} s after the checks through GET\n`,
    );
    passed = true;
  } finally {
    // On a failure, what each service logged at warn and above names the cause.
    if (!passed) {
      for (const name of REPLICAS) {
        printWarnings(name, procs.output(name));
        const dump = process.env.FAULTS_DUMP_DIR;
        if (dump) await Bun.write(join(dump, `${name}.log`), procs.output(name));
      }
    }
    executor.stop();
    receiver.stop();
    await nc.close();
  }
}, 240_000);
