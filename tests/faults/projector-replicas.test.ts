import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { startNats } from "../helpers/nats.ts";
import { startNatsCluster } from "../helpers/nats-cluster.ts";
import { viewsMatchFold } from "../helpers/views-audit.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, startCallbackReceiver, verifyEchoOutcomes } from "./checks.ts";
import { FAULT_CLIENT, faultYaml, hubProcs, type ProcName } from "./procs.ts";

// Two projector replicas: one claims the partition and folds, the other stands by. SIGKILL the active
// one under load: the standby takes over, views update again within 5 s, and every view ends
// equal to the fold of its job's events (none lost, stale or out of order), as `switchyard audit
// verify` checks it. A third of the jobs ask for a callback, so their views take a third event
// (callback.delivered) on another subject, which a lost or reordered event would show. Once
// against one nats-server, once against the three-node cluster helper with R3 streams and buckets
// (the lease and claims buckets included).

/** Jobs whose request number is a multiple of 3 ask for a callback. */
const withCallback = (n: number) => n % 3 === 0;

async function failover(nats: { readonly url: string; readonly nc: NatsConnection }, replicas = 1) {
  const yaml = faultYaml({ natsUrl: nats.url, nats: { replicas } });
  await using procs = await hubProcs(yaml, nats.url);
  const projectors: ProcName[] = ["projector", "projector#2"];
  for (const name of projectors) await procs.start(name);
  for (const name of ["executor", "callback", "ingress"] as const) await procs.start(name);
  const active = projectors.filter((p) => procs.output(p).includes('"msg":"partition claimed"'));
  expect(active).toHaveLength(1);
  const [leader] = active as [ProcName];
  const standby = projectors.find((p) => p !== leader) as ProcName;
  expect(procs.output(standby)).toContain('"msg":"projector standing by"');

  await using receiver = startCallbackReceiver();
  const load = new Load(procs.url, (request_id, n) => ({
    request_id,
    route: "f.echo",
    input: request_id,
    ...(withCallback(n) ? { callback_url: `${receiver.url}/cb` } : {}),
  }));
  load.start(8);
  await waitFor("load before the kill", () => load.accepted.size >= 300, { timeoutMs: 20_000 });
  const kv = await new Kvm(nats.nc).open(TOPOLOGY.jobsBucket);
  const view = async (jobId: string) => kv.get(`${FAULT_CLIENT.id}.${jobId}`);

  await procs.kill(leader);
  const killedAt = performance.now();
  const acceptedAtKill = new Set(load.jobIds());
  // The first view of a job accepted after the kill shows that someone folds again.
  const resumedAfter = await waitFor(
    "a view written for a job accepted after the kill",
    async () => {
      const fresh = load.jobIds().filter((id) => !acceptedAtKill.has(id));
      for (const id of fresh.slice(0, 20)) {
        if ((await view(id))?.operation === "PUT") return performance.now() - killedAt;
      }
      return undefined;
    },
    { timeoutMs: 15_000, intervalMs: 50 },
  );
  process.stderr.write(
    `projector failover: views updated again ${Math.round(resumedAfter)} ms after the kill\n`,
  );
  expect(resumedAfter).toBeLessThan(5_000);
  expect(procs.output(standby)).toContain('"msg":"partition claimed"');

  await waitFor(
    "more load after the failover",
    () => load.accepted.size >= acceptedAtKill.size + 300,
    {
      timeoutMs: 20_000,
    },
  );
  await load.stop();
  expect(load.unexpected).toEqual([]);
  await load.settle();
  const jsm = await jetstreamManager(nats.nc);
  await verifyEchoOutcomes({ jsm, load, base: procs.url, receiver, withCallback });
  const audit = await viewsMatchFold({ jsm, natsUrl: nats.url });
  expect(audit.stderr).toBe("");
  expect(audit.stdout).toContain(" 0 divergences");
  expect(audit.exitCode).toBe(0);
  // Every accepted job has a view to compare (a job without one would be a divergence too).
  expect(Number(/(\d+) jobs,/.exec(audit.stdout)?.[1])).toBe(load.accepted.size);
  const wrong: string[] = [];
  for (const jobId of load.jobIds()) {
    const entry = await view(jobId);
    const status =
      entry?.operation === "PUT" ? (entry.json() as { status?: string }).status : undefined;
    if (status !== "done") wrong.push(`${jobId}: ${status ?? "no view"}`);
  }
  expect(wrong).toEqual([]);
}

test("projector replicas: the active one SIGKILLed under load, the standby takes over within 5 s", async () => {
  await using nats = await startNats();
  await failover(nats);
}, 120_000);

test("the same on a three-node cluster (R3): the standby takes over within 5 s", async () => {
  await using cluster = await startNatsCluster({ size: 3 });
  const url = cluster.urls.join(",");
  const nc = await connect({ servers: [...cluster.urls] });
  try {
    await failover({ url, nc }, 3);
  } finally {
    await nc.close();
  }
}, 180_000);
