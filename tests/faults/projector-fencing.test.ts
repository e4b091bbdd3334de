import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { CLAIMS_BUCKET, claimKey } from "../../shared/lease/index.ts";
import { startNats } from "../helpers/nats.ts";
import { viewsMatchFold } from "../helpers/views-audit.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, startCallbackReceiver, verifyEchoOutcomes } from "./checks.ts";
import { FAULT_CLIENT, faultYaml, type HubProcs, hubProcs, type ProcName } from "./procs.ts";

// A stale projector leader is fenced. The active projector is frozen (SIGSTOP) under load with
// events taken and views unwritten, long past its member record (3 s): the standby claims the
// partition, recreates the durable at the ack floor and folds. Then the frozen one resumes
// (SIGCONT) with its old state: it must write nothing more (its claim's check stands it down
// before a round writes, and a write already on its way is refused by the views'
// compare-and-set) and must not claim the partition back. Last, the new leader is SIGKILLed and
// the once-stale process leads again with what it kept in memory from before its pause (cached
// views, delivery bookkeeping): it must fold and acknowledge like a fresh leader. (It did not: its
// ack floor from its first lead still counted the messages it dropped as unwritten, so it never
// acked again and every event came back after the ack wait.) Throughout, a watcher sees no view
// go backwards (its `seq`, the stream sequence of the last event folded into it, never
// decreases), and at the end every view equals the fold of its job's events (`audit verify`) and
// the projector's durable has nothing left unacknowledged.

const CLAIMED = '"msg":"partition claimed"';
/** "member record lost; standing down" or "partition claimed by another member; standing down". */
const STOOD_DOWN = '; standing down"';
/** Who holds the projector's claim on the single partition, as the claims bucket says. */
async function claimHolder(nc: NatsConnection): Promise<string> {
  const entry = await (await new Kvm(nc).open(CLAIMS_BUCKET)).get(claimKey("projector", 0));
  return entry?.operation === "PUT" ? entry.string() : `(${entry?.operation ?? "none"})`;
}
/** Jobs whose request number is a multiple of 3 ask for a callback (a third event per view). */
const withCallback = (n: number) => n % 3 === 0;

/** Every revision of every view as the bucket's watcher saw them; collects views going back. */
async function watchViews(nc: NatsConnection) {
  const kv = await new Kvm(nc).open(TOPOLOGY.jobsBucket);
  const watcher = await kv.watch();
  const lastSeq = new Map<string, number>();
  const backwards: string[] = [];
  let seen = 0;
  const done = (async () => {
    for await (const entry of watcher) {
      if (entry.operation !== "PUT" || entry.length === 0) continue;
      seen++;
      const { seq, status } = entry.json() as { seq: number; status: string };
      const before = lastSeq.get(entry.key) ?? 0;
      if (seq < before) backwards.push(`${entry.key}: seq ${before} then ${seq} (${status})`);
      lastSeq.set(entry.key, Math.max(before, seq));
    }
  })();
  return {
    backwards,
    seen: () => seen,
    async stop() {
      watcher.stop();
      await done;
    },
  };
}

/**
 * What a failure needs to be understood: the projector's durable, the lease history of both
 * projectors, and a few views that are not done (their `seq` says which event they stopped at).
 */
async function explainStuck(nc: NatsConnection, procs: HubProcs, load: Load): Promise<string> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.consumers.info(TOPOLOGY.eventsStream, TOPOLOGY.consumers.projector);
  const lines = [
    `projector durable: delivered ${JSON.stringify(info.delivered)}, ack floor ${JSON.stringify(info.ack_floor)}, pending ${info.num_pending}, ack pending ${info.num_ack_pending}, redelivered ${info.num_redelivered}`,
  ];
  for (const name of ["projector", "projector#2"] as const) {
    const leases = procs
      .output(name)
      .split("\n")
      .filter((l) => l.includes('"component":"projector"') || l.includes('"component":"claims"'));
    lines.push(`${name}:`, ...leases);
  }
  const kv = await new Kvm(nc).open(TOPOLOGY.jobsBucket);
  for (const id of load.jobIds()) {
    const entry = await kv.get(`${FAULT_CLIENT.id}.${id}`);
    const view = entry?.operation === "PUT" ? (entry.json() as { status?: string }) : undefined;
    if (view?.status !== "done") lines.push(`view ${id}: ${JSON.stringify(view)}`);
    if (lines.length > 30) break;
  }
  return lines.join("\n");
}

/** Output a process wrote after `offset` characters. */
const since = (procs: HubProcs, name: ProcName, offset: number) => procs.output(name).slice(offset);

interface Phases {
  readonly nc: NatsConnection;
  readonly procs: HubProcs;
  /** The active projector, frozen and resumed. */
  readonly stale: ProcName;
  /** The standby, which leads while the other is frozen and is killed afterwards. */
  readonly next: ProcName;
  /** Waits until `count` more runs were accepted. */
  readonly moreLoad: (what: string, count: number) => Promise<void>;
}

/** The leader frozen past its member record and resumed, then made to lead again; load runs throughout. */
async function freezeResumeLeadAgain({ nc, procs, stale, next, moreLoad }: Phases) {
  const stalePid = procs.pid(stale) as number;
  // Frozen mid-flight: it holds events it has not written, and stops renewing its member record.
  process.kill(stalePid, "SIGSTOP");
  let resumed = false;
  try {
    await waitFor(
      "the standby to claim the partition",
      () => procs.output(next).includes(CLAIMED),
      {
        timeoutMs: 15_000,
      },
    );
    await moreLoad("load folded by the new leader while the old one is frozen", 300);
    const staleOffset = procs.output(stale).length;
    process.kill(stalePid, "SIGCONT");
    resumed = true;
    await waitFor(
      "the resumed projector to find its claim gone and stand down",
      () => since(procs, stale, staleOffset).includes(STOOD_DOWN),
      { timeoutMs: 15_000 },
    );
    await moreLoad("load after the old leader resumed", 200);
    // The claim stayed with the new leader: the resumed process did not take it back.
    const { holder } = JSON.parse(await claimHolder(nc)) as { holder: string };
    expect(holder.endsWith(`/${procs.pid(next)}`)).toBe(true);
    expect(since(procs, stale, staleOffset)).not.toContain(CLAIMED);

    // The once-stale process leads again, with the views it held in memory before its pause.
    const leadOffset = procs.output(stale).length;
    await procs.kill(next);
    await waitFor(
      "the once-stale projector to claim the partition again",
      () => since(procs, stale, leadOffset).includes(CLAIMED),
      { timeoutMs: 15_000 },
    ).catch(async (err: unknown) => {
      // What a failure needs: who holds the claim now, and what the once-stale process did.
      const holder = await claimHolder(nc);
      const tail = procs.output(stale).slice(staleOffset).split("\n").slice(-40).join("\n");
      throw new Error(
        `${(err as Error).message}\nclaim now: ${holder}; ${stale} is pid ${stalePid}\n${stale} since it resumed:\n${tail}`,
      );
    });
    await moreLoad("load folded by the once-stale projector", 300);
  } finally {
    if (!resumed) process.kill(stalePid, "SIGCONT");
  }
}

test("a paused projector leader resumes fenced: it writes nothing stale, no view goes backwards", async () => {
  await using nats = await startNats();
  await using procs = await hubProcs(faultYaml({ natsUrl: nats.url }), nats.url);
  const projectors: ProcName[] = ["projector", "projector#2"];
  for (const name of projectors) await procs.start(name);
  for (const name of ["executor", "callback", "ingress"] as const) await procs.start(name);
  const [stale] = projectors.filter((p) => procs.output(p).includes(CLAIMED));
  if (stale === undefined) throw new Error("no projector claimed the partition");
  const next = projectors.find((p) => p !== stale) as ProcName;

  const views = await watchViews(nats.nc);
  await using receiver = startCallbackReceiver();
  const load = new Load(procs.url, (request_id, n) => ({
    request_id,
    route: "f.echo",
    input: request_id,
    ...(withCallback(n) ? { callback_url: `${receiver.url}/cb` } : {}),
  }));
  load.start(8);
  const moreLoad = async (what: string, count: number) => {
    const target = load.accepted.size + count;
    await waitFor(what, () => load.accepted.size >= target, { timeoutMs: 30_000 });
  };
  await moreLoad("load before the pause", 300);

  await freezeResumeLeadAgain({ nc: nats.nc, procs, stale, next, moreLoad });
  await load.stop();
  expect(load.unexpected).toEqual([]);
  await load.settle();

  const jsm = await jetstreamManager(nats.nc);
  await verifyEchoOutcomes({ jsm, load, base: procs.url, receiver, withCallback }).catch(
    async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n${await explainStuck(nats.nc, procs, load)}`);
    },
  );
  const audit = await viewsMatchFold({ jsm, natsUrl: nats.url });
  expect(audit.stderr).toBe("");
  expect(audit.stdout).toContain(" 0 divergences");
  expect(audit.exitCode).toBe(0);
  expect(Number(/(\d+) jobs,/.exec(audit.stdout)?.[1])).toBe(load.accepted.size);
  await views.stop();
  expect(views.seen()).toBeGreaterThanOrEqual(load.accepted.size);
  expect(views.backwards).toEqual([]);
}, 180_000);
