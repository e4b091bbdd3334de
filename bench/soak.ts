#!/usr/bin/env bun
/**
 * Soak test (issue 7): `npm run soak -- --minutes 10`.
 *
 * Starts a private nats-server (temp store, random loopback port) and the hub's processes as
 * Kubernetes deploys them (`switchyard serve <svc>`; the read models together, `serve projector
 * indexer`), plus a verifying callback receiver on 127.0.0.1.
 * Mixed load: new runs (a quarter with callback_url), replays of accepted request_ids, and GETs.
 * Every `--kill-every` seconds (60) one of those processes, picked at random, is SIGKILLed and started again.
 * At the end the unanswered requests are retried with their request_id, and the stream is checked:
 * accepted must equal completed, duplicates must be 0 (a second run.requested or status event, a
 * replay answered with another job, a second callback.delivered, a stored run no caller was told
 * about). Prints p99 and RSS over time; exits 1 when a check fails.
 *
 * Options: --minutes N (10), --rate R requests/s (200), --kill-every S (60), --seed N.
 * Traffic goes only to 127.0.0.1. Children and temp dirs are removed on exit and on SIGINT/SIGTERM.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { type ManagedNatsServer, startNatsServer } from "../shared/nats/index.ts";
import {
  type CallbackReceiver,
  Load,
  percentile,
  requestNumber,
  startCallbackReceiver,
  subjectEvents,
} from "../tests/faults/checks.ts";
import {
  DEPLOYED_PROCS,
  faultYaml,
  getJob,
  type HubProcs,
  hubProcs,
  type ProcName,
  pool,
  rssBytes,
  startDeployedProcs,
  subjectCounts,
} from "../tests/faults/procs.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    minutes: { type: "string", default: "10" },
    rate: { type: "string", default: "200" },
    "kill-every": { type: "string", default: "60" },
    seed: { type: "string" },
  },
  strict: true,
});
const minutes = Number(values.minutes);
const rate = Number(values.rate);
const killEveryMs = Number(values["kill-every"]) * 1000;
if (!(minutes > 0) || !(rate > 0) || !(killEveryMs > 0)) {
  process.stderr.write("usage: bun bench/soak.ts [--minutes N] [--rate R] [--kill-every S]\n");
  process.exit(2);
}

// A small seeded generator, so a run's kill order can be repeated with --seed.
let seed = Number(values.seed ?? Date.now() % 2 ** 31);
const firstSeed = seed;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};

const log = (text: string) => process.stdout.write(`[soak ${new Date().toISOString()}] ${text}\n`);
const mib = (bytes: number) => Math.round(bytes / 2 ** 20);

let natsServer: ManagedNatsServer | undefined;
let natsDir: string | undefined;
let procs: HubProcs | undefined;
let receiver: CallbackReceiver | undefined;
let cleaned = false;

async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await procs?.stop().catch(() => {});
  await receiver?.stop().catch(() => {});
  await natsServer?.stop("SIGKILL").catch(() => {});
  if (natsDir) await rm(natsDir, { recursive: true, force: true }).catch(() => {});
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    log(`${signal}: stopping and cleaning up`);
    void cleanup().then(() => process.exit(130));
  });
}

interface Sample {
  readonly atSec: number;
  readonly requests: number;
  readonly p99Ms: number;
  readonly rssMiB: Record<string, number>;
}

async function main(): Promise<number> {
  natsDir = await mkdtemp(join(tmpdir(), "switchyard-soak-nats-"));
  natsServer = await startNatsServer({ storeDir: natsDir, env: process.env });
  const natsUrl = natsServer.url;
  receiver = startCallbackReceiver();
  const rx = receiver;
  procs = await hubProcs(faultYaml({ natsUrl, logLevel: "warn" }), natsUrl);
  const hub = procs;
  await startDeployedProcs(hub);
  log(`nats ${natsUrl}, ingress ${hub.url()}, receiver ${rx.url}, seed ${firstSeed}`);

  const withCallback = (n: number) => n % 4 === 0;
  const load = new Load(hub.url, (request_id, n) => ({
    request_id,
    route: "f.echo",
    input: `soak ${request_id}`,
    ...(withCallback(n) ? { callback_url: `${rx.url}/cb` } : {}),
  }));
  let n = 0;
  const prefix = `soak${Date.now().toString(36)}`;
  const counters = { runs: 0, replays: 0, gets: 0, getErrors: 0, replayMismatch: 0 };
  const accepted = () => [...load.accepted.entries()];

  let running = true;
  const workers = 16;
  const periodMs = (workers * 1000) / rate;
  const loops = Array.from({ length: workers }, async () => {
    let acceptedCache: [string, string][] = [];
    while (running) {
      const started = performance.now();
      const r = random();
      if (r < 0.5 || load.accepted.size === 0) {
        const i = n++;
        await load.submit(`${prefix}-${i}`, i);
        counters.runs++;
      } else {
        if (acceptedCache.length === 0 || random() < 0.05) acceptedCache = accepted();
        const [rid, jobId] = acceptedCache[Math.floor(random() * acceptedCache.length)] ?? [];
        if (rid && jobId) {
          if (r < 0.7) {
            const res = await load.submit(rid, requestNumber(rid));
            counters.replays++;
            if (res.jobId && res.jobId !== jobId) counters.replayMismatch++;
          } else {
            const res = await getJob(hub.url(), jobId);
            counters.gets++;
            if (res.status !== 200 && res.status !== 503 && res.status !== 0) counters.getErrors++;
          }
        }
      }
      const wait = periodMs - (performance.now() - started);
      if (wait > 0) await Bun.sleep(wait);
    }
  });

  const samples: Sample[] = [];
  const kills: string[] = [];
  const t0 = Date.now();
  const endAt = t0 + minutes * 60_000;
  let nextKill = t0 + killEveryMs;
  let latencyIndex = 0;
  let requestsAtLast = 0;
  const pids = () =>
    Object.fromEntries(
      DEPLOYED_PROCS.map((s) => {
        const pid = hub.pid(s);
        let rss = 0;
        try {
          rss = pid && hub.running(s) ? mib(rssBytes(pid)) : 0;
        } catch {
          rss = 0;
        }
        return [s, rss];
      }),
    );
  while (Date.now() < endAt) {
    await Bun.sleep(Math.min(10_000, Math.max(0, endAt - Date.now())));
    const window = load.latencies.slice(latencyIndex);
    latencyIndex = load.latencies.length;
    const requests = counters.runs + counters.replays + counters.gets;
    const sample: Sample = {
      atSec: Math.round((Date.now() - t0) / 1000),
      requests: requests - requestsAtLast,
      p99Ms: Math.round(percentile(window, 99) * 10) / 10,
      rssMiB: pids(),
    };
    requestsAtLast = requests;
    samples.push(sample);
    log(
      `t=${sample.atSec}s requests=${sample.requests} p99=${sample.p99Ms}ms accepted=${load.accepted.size} rss=${JSON.stringify(sample.rssMiB)}`,
    );
    if (Date.now() >= nextKill && Date.now() < endAt) {
      const victim = DEPLOYED_PROCS[Math.floor(random() * DEPLOYED_PROCS.length)] as ProcName;
      log(`SIGKILL ${victim}`);
      await hub.kill(victim);
      await hub.start(victim);
      kills.push(`${sample.atSec}s ${victim}`);
      log(`${victim} restarted`);
      nextKill += killEveryMs;
    }
  }
  running = false;
  await Promise.all(loops);
  log("load stopped; retrying unanswered requests with their request_id");
  await load.settle(120_000);

  // Completion and duplicates, from the stream.
  const nc = await connect({ servers: natsUrl, name: "soak-check" });
  try {
    const jsm = await jetstreamManager(nc);
    const jobIds = new Set(load.accepted.values());
    const deadline = Date.now() + 120_000;
    let jobCounts: Record<string, number> = {};
    let completed = 0;
    while (Date.now() < deadline) {
      jobCounts = await subjectCounts(jsm, "sy.evt.ops.*.job");
      completed = [...jobIds].filter((id) => (jobCounts[`sy.evt.ops.${id}.job`] ?? 0) > 0).length;
      if (completed === jobIds.size) break;
      await Bun.sleep(1_000);
    }
    const runCounts = await subjectCounts(jsm, "sy.evt.ops.*.run");
    const duplicateRuns = Object.values(runCounts).filter((c) => c > 1).length;
    const duplicateOutcomes = [...jobIds].filter(
      (id) => (jobCounts[`sy.evt.ops.${id}.job`] ?? 0) > 1,
    ).length;
    const orphans = Object.keys(runCounts).filter((s) => !jobIds.has(s.split(".")[3] ?? "")).length;

    // Callbacks: one callback.delivered per job that asked, and each reached the receiver.
    const cbJobs = accepted()
      .filter(([rid]) => withCallback(requestNumber(rid)))
      .map(([, id]) => id);
    const cbDeadline = Date.now() + 60_000;
    const received = () => new Set(rx.received.map((r) => r.jobId));
    while (Date.now() < cbDeadline && cbJobs.some((id) => !received().has(id))) {
      await Bun.sleep(1_000);
    }
    const got = received();
    const callbacksMissing = cbJobs.filter((id) => !got.has(id)).length;
    let duplicateCallbackOutcomes = 0;
    await pool(cbJobs, 32, async (id) => {
      const events = await subjectEvents(jsm, id, "cb");
      if (events.filter((e) => e.type === "callback.delivered").length > 1) {
        duplicateCallbackOutcomes++;
      }
    });
    const receiverRepeats = [...rx.counts().values()].filter((c) => c > 1).length;

    // Views: every job (or 5,000 of them on long runs) read through GET must say done. A projector
    // killed mid-batch heals its views when the held messages come back (ack wait, 30 s).
    const all = [...jobIds];
    const sample = all.length <= 5_000 ? all : all.filter(() => random() < 5_000 / all.length);
    let viewsNotDone = sample.length;
    const viewDeadline = Date.now() + 60_000;
    while (viewsNotDone > 0 && Date.now() < viewDeadline) {
      let notDone = 0;
      await pool(sample, 16, async (id) => {
        if ((await getJob(hub.url(), id)).body.status !== "done") notDone++;
      });
      viewsNotDone = notDone;
      if (viewsNotDone > 0) await Bun.sleep(1_000);
    }

    const duplicates =
      duplicateRuns +
      duplicateOutcomes +
      duplicateCallbackOutcomes +
      counters.replayMismatch +
      orphans +
      load.unexpected.filter((u) => u.includes("two job ids")).length;
    const rssPeak: Record<string, number> = {};
    for (const s of samples) {
      for (const [k, v] of Object.entries(s.rssMiB)) rssPeak[k] = Math.max(rssPeak[k] ?? 0, v);
    }
    const report = {
      minutes,
      seed: firstSeed,
      requests: counters,
      accepted: jobIds.size,
      completed,
      duplicates,
      duplicate_detail: {
        run_requested: duplicateRuns,
        status_events: duplicateOutcomes,
        callback_delivered: duplicateCallbackOutcomes,
        replay_other_job: counters.replayMismatch,
        stored_but_unacknowledged: orphans,
      },
      callbacks: {
        asked: cbJobs.length,
        received: cbJobs.length - callbacksMissing,
        missing: callbacksMissing,
        receiver_repeats_same_webhook_id: receiverRepeats,
        invalid_signatures: rx.invalid,
      },
      views_checked: sample.length,
      views_not_done: viewsNotDone,
      unexpected_answers: load.unexpected.slice(0, 20),
      kills,
      p99_ms_over_time: samples.map((s) => [s.atSec, s.p99Ms]),
      rss_mib_over_time: samples.map((s) => [s.atSec, s.rssMiB]),
      rss_mib_peak: rssPeak,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    const ok =
      jobIds.size === completed &&
      duplicates === 0 &&
      callbacksMissing === 0 &&
      rx.invalid === 0 &&
      viewsNotDone === 0 &&
      load.unexpected.length === 0 &&
      counters.getErrors === 0;
    log(ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  } finally {
    await nc.close();
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`soak failed: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  })
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  });
