import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { createEventLayout } from "../../shared/jobs/index.ts";
import {
  CLAIMS_BUCKET,
  type ClaimRecord,
  claimKey,
  LEASE_BUCKET,
  memberKey,
} from "../../shared/lease/index.ts";
import { startNats } from "../helpers/nats.ts";
import { auditVerify } from "../helpers/views-audit.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load } from "./checks.ts";
import { FAULT_CLIENT, faultYaml, hubProcs, type ProcName } from "./procs.ts";

// Projector replicas sharing P = 4 partitions, as separate processes on one nats-server: one
// replica holds all four; two more join and each ends with a fair share (1–2), after which the
// claims stay put; one is SIGKILLed under a paced load and its partitions are claimed and folded
// again within 5 s. Who holds what is read from the claims bucket (sy_claims), the owners' member
// records from sy_leases, as an operator would. No view ever goes backwards, and every view ends
// equal to the fold of its events (`audit verify`).

const P = 4;
const RANK: Record<string, number> = { queued: 0, dispatched: 1, running: 2 };
const rank = (status: string | undefined) => (status === undefined ? -1 : (RANK[status] ?? 3));

interface Holdings {
  /** Partitions held per pid, owners with a live member record only. */
  readonly byPid: Map<number, number[]>;
  /** Each claim's revision: unchanged revisions mean no claim moved. */
  readonly revisions: string;
}

async function holdings(claims: KV, leases: KV): Promise<Holdings> {
  const byPid = new Map<number, number[]>();
  const revisions: number[] = [];
  for (let p = 0; p < P; p++) {
    const entry = await claims.get(claimKey("projector", p));
    revisions.push(entry?.revision ?? 0);
    if (entry?.operation !== "PUT") continue;
    const claim = entry.json<ClaimRecord>();
    if (claim.owner === "") continue;
    if ((await leases.get(memberKey(claim.owner)))?.operation !== "PUT") continue;
    const pid = Number(claim.holder.slice(claim.holder.lastIndexOf("/") + 1));
    byPid.set(pid, [...(byPid.get(pid) ?? []), p]);
  }
  return { byPid, revisions: revisions.join(",") };
}

test("projector replicas share 4 partitions: join, fair share, SIGKILL, takeover within 5 s", async () => {
  await using nats = await startNats();
  const yaml = faultYaml({ natsUrl: nats.url, nats: { partitions: P } });
  await using procs = await hubProcs(yaml, nats.url);
  await procs.start("projector");
  for (const name of ["executor", "ingress"] as const) await procs.start(name);
  const layout = createEventLayout(P);
  const kvm = new Kvm(nats.nc);
  const claims = await kvm.open(CLAIMS_BUCKET);
  const leases = await kvm.open(LEASE_BUCKET);
  const views = await Promise.all(layout.streams().map((_, p) => kvm.open(layout.viewBucket(p))));
  const heldOf = (h: Holdings, name: ProcName) => h.byPid.get(procs.pid(name) ?? -1) ?? [];

  // Alone, one replica holds every partition.
  await waitFor("the only projector to hold 4 of 4", async () => {
    return heldOf(await holdings(claims, leases), "projector").length === P;
  });

  // Two more join: each ends with 1–2 of 4, every partition held.
  const replicas: ProcName[] = ["projector", "projector#2", "projector#3"];
  const joinedAt = performance.now();
  await procs.start("projector#2");
  await procs.start("projector#3");
  const fair = (h: Holdings) =>
    replicas.every((name) => [1, 2].includes(heldOf(h, name).length)) &&
    replicas.reduce((sum, name) => sum + heldOf(h, name).length, 0) === P;
  const balanced = await waitFor(
    "three replicas each holding 1–2 of 4",
    async () => {
      const h = await holdings(claims, leases);
      return fair(h) ? h : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  const rebalanceMs = performance.now() - joinedAt;
  // A quiet window longer than the claims' stability window (4 renewals): nothing moves.
  await Bun.sleep(6_000);
  const quiet = await holdings(claims, leases);
  expect(quiet.revisions).toBe(balanced.revisions);
  expect(fair(quiet)).toBe(true);

  // Views never go backwards: sampled while the load, the kill and the takeover go on.
  const load = new Load(procs.url, (request_id) => ({ request_id, route: "f.echo", input: "x" }));
  const seen = new Map<string, number>();
  const regressions: string[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      for (const jobId of load.jobIds().slice(-40)) {
        const entry = await views[layout.partitionOf({ job_id: jobId })]?.get(
          `${FAULT_CLIENT.id}.${jobId}`,
        );
        if (entry?.operation !== "PUT") continue;
        const now = rank(entry.json<{ status?: string }>().status);
        if (now < (seen.get(jobId) ?? -1))
          regressions.push(`${jobId}: rank ${seen.get(jobId)} → ${now}`);
        seen.set(jobId, Math.max(now, seen.get(jobId) ?? -1));
      }
      await Bun.sleep(100);
    }
  })();
  load.start(4, 20);
  await waitFor("load before the kill", () => load.accepted.size >= 200, { timeoutMs: 20_000 });

  const victim = replicas.reduce((a, b) =>
    heldOf(quiet, b).length > heldOf(quiet, a).length ? b : a,
  );
  const lost = heldOf(quiet, victim);
  const survivors = replicas.filter((name) => name !== victim);
  await procs.kill(victim);
  const killedAt = performance.now();
  const acceptedAtKill = new Set(load.jobIds());
  await waitFor(
    "the victim's partitions claimed by the survivors",
    async () => {
      const h = await holdings(claims, leases);
      const taken = survivors.flatMap((name) => heldOf(h, name));
      return lost.every((p) => taken.includes(p));
    },
    { timeoutMs: 15_000, intervalMs: 50 },
  );
  const takeoverMs = performance.now() - killedAt;
  const takenAt = performance.now();
  // A job accepted after the kill on each lost partition: its view is written, done.
  const foldedAfter: number[] = [];
  for (const p of lost) {
    const folded = await waitFor(
      `a job accepted after the kill on partition ${p} to be folded`,
      async () => {
        const fresh = load
          .jobIds()
          .filter((id) => !acceptedAtKill.has(id) && layout.partitionOf({ job_id: id }) === p);
        for (const id of fresh.slice(0, 10)) {
          const entry = await views[p]?.get(`${FAULT_CLIENT.id}.${id}`);
          if (entry?.operation === "PUT" && entry.json<{ status?: string }>().status === "done") {
            return performance.now() - takenAt;
          }
        }
        return undefined;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    foldedAfter.push(folded);
  }
  process.stderr.write(
    `partition rebalance: fair share ${Math.round(rebalanceMs)} ms after two joined; ` +
      `${victim}'s ${lost.length} partitions claimed ${Math.round(takeoverMs)} ms after SIGKILL, ` +
      `a new job folded on each ${foldedAfter.map(Math.round).join("/")} ms after the takeover\n`,
  );
  expect(takeoverMs).toBeLessThan(5_000);
  for (const ms of foldedAfter) expect(ms).toBeLessThan(5_000);

  await waitFor(
    "more load after the takeover",
    () => load.accepted.size >= acceptedAtKill.size + 200,
    {
      timeoutMs: 20_000,
    },
  );
  await load.stop();
  await load.settle();
  sampling = false;
  await sampler;
  expect(load.unexpected).toEqual([]);
  expect(regressions).toEqual([]);
  expect(seen.size).toBeGreaterThan(0);

  const notDone: string[] = [];
  await waitFor(
    "every view done",
    async () => {
      notDone.length = 0;
      for (const id of load.jobIds()) {
        const entry = await views[layout.partitionOf({ job_id: id })]?.get(
          `${FAULT_CLIENT.id}.${id}`,
        );
        if (entry?.operation !== "PUT" || entry.json<{ status?: string }>().status !== "done") {
          notDone.push(id);
        }
      }
      return notDone.length === 0;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  ).catch(() => undefined);
  expect(notDone).toEqual([]);
  const jsm = await jetstreamManager(nats.nc);
  await waitFor("every partition's projector to acknowledge every event", async () => {
    for (const stream of layout.streams()) {
      const info = await jsm.consumers.info(stream, "projector");
      if (info.num_pending > 0 || info.num_ack_pending > 0) return false;
    }
    return true;
  });
  const audit = await auditVerify(nats.url);
  expect(audit.stdout).toContain(" 0 divergences");
  expect(audit.exitCode).toBe(0);
}, 150_000);
