import { describe, expect, test } from "bun:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { createProjector } from "../../services/projector/projector.ts";
import {
  ReadModelRunningError,
  type RebuildStep,
  rebuildProjection,
} from "../../services/projector/rebuild.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { jobViewKey, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import {
  createPartitionClaims,
  openClaimsBucket,
  openLeaseBucket,
} from "../../shared/lease/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { DEFAULT_CLIENTS, startHub, type TestHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

// `projector rebuild` holds the projector's lease (KV sy_leases, key `projector`) for its whole
// run: a projector replica holding the partition's claim refuses it, a standby replica claims
// nothing until the rebuild ends and then takes over at the head. Replicas here are in-process
// projectors on their own NATS connections, with partition claims exactly as
// services/runtime/read-model-leases.ts gives them.

const ACME = DEFAULT_CLIENTS[0] as (typeof DEFAULT_CLIENTS)[0];
const silent = createLogger({ level: "silent", service: "test" });

/** A projector replica, as `switchyard serve projector` runs one. */
async function replica(nats: TestNats, name: string) {
  const nc = await connect({ servers: nats.url, name });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const { logger, logs } = captureLogger();
  const lease = createPartitionClaims({
    leases: await openLeaseBucket(nc, { replicas: 1 }),
    jsm,
    claims: await openClaimsBucket(nc, { replicas: 1 }),
    groups: { projector: 1 },
    rebuildKey: SINGLE_PARTITION_LAYOUT.leaseKey,
    holder: name,
    logger,
  }).lease("projector", 0);
  const kv = await new Kvm(nc).open(TOPOLOGY.jobsBucket);
  const projector = createProjector({
    layout: SINGLE_PARTITION_LAYOUT,
    nc,
    js,
    jsm,
    kv,
    logger,
    lease,
  });
  await projector.start();
  return {
    lease,
    logs,
    async stop() {
      await projector.stop();
      await nc.close();
    },
  };
}

async function runJobs(hub: TestHub, prefix: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await hub.run(
      { request_id: `${prefix}-${i}`, route: "demo.echo", input: `n${i}` },
      ACME.token,
    );
    expect(res.status).toBe(202);
    ids.push(((await res.json()) as { job_id: string }).job_id);
  }
  return ids;
}

async function view(hub: TestHub, id: string): Promise<{ status?: string } | undefined> {
  const entry = await hub.running.hub.jobs.get(jobViewKey({ client_id: ACME.id, job_id: id }));
  return entry?.operation === "PUT" ? entry.json() : undefined;
}

async function viewsDone(hub: TestHub, ids: readonly string[]): Promise<void> {
  await waitFor("every view written as done", async () => {
    for (const id of ids) if ((await view(hub, id))?.status !== "done") return false;
    return true;
  });
}

const rebuild = (hub: TestHub, onStep?: (step: RebuildStep) => Promise<void>) => {
  const { nc, js, jsm } = hub.running.hub;
  return rebuildProjection({
    layout: SINGLE_PARTITION_LAYOUT,
    nc,
    js,
    jsm,
    logger: silent,
    probeMs: 200,
    ...(onStep ? { onStep } : {}),
  });
};

describe("projector rebuild holds the projector lease, and replicas keep off it", () => {
  test("an active projector replica (its claim) refuses the rebuild by name, and nothing changes", async () => {
    await using nats = await startNats();
    await using hub = await startHub({ nats, services: ["ingress", "executor", "callback"] });
    const active = await replica(nats, "replica-a");
    expect(active.lease.holding()).toBe(true);
    const ids = await runJobs(hub, "a", 5);
    await viewsDone(hub, ids);
    const jsm = hub.running.hub.jsm;
    const before = await jsm.consumers.info(TOPOLOGY.eventsStream, TOPOLOGY.consumers.projector);

    const refused = await rebuild(hub).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ReadModelRunningError);
    expect((refused as Error).message).toContain("the projector claim is held by replica-a");

    const after = await jsm.consumers.info(TOPOLOGY.eventsStream, TOPOLOGY.consumers.projector);
    expect(after.created).toBe(before.created); // the durable was not recreated
    expect(active.lease.holding()).toBe(true);
    const later = await runJobs(hub, "a-later", 1);
    await viewsDone(hub, [...ids, ...later]); // the active replica still folds
    await active.stop();
  });

  test("a standby replica stays standby for the whole rebuild, then takes over at the head", async () => {
    await using nats = await startNats();
    await using hub = await startHub({ nats, services: ["ingress", "executor", "callback"] });
    const first = await replica(nats, "replica-a");
    const ids = await runJobs(hub, "b", 10);
    await viewsDone(hub, ids);
    const before = await Promise.all(ids.map((id) => view(hub, id)));
    await first.stop(); // the operator stops the active replica, then starts the rebuild
    await hub.running.hub.jobs.put(
      jobViewKey({ client_id: ACME.id, job_id: ids[0] as string }),
      JSON.stringify({ bogus: true }),
    );

    let standby: Awaited<ReturnType<typeof replica>> | undefined;
    const seen: Record<string, unknown> = {};
    const leases = await openLeaseBucket(hub.running.hub.nc, { replicas: 1 });
    const result = await rebuild(hub, async (step) => {
      if (step === "lease_taken") {
        // A replica starting now (a restarted pod, a second replica) must wait its turn.
        standby = await replica(nats, "replica-b");
        const second = await rebuild(hub).catch((err: unknown) => err);
        seen.second = second instanceof ReadModelRunningError ? second.message : second;
      }
      const holder = (await leases.get("projector"))?.json<{ holder: string }>().holder;
      seen[step] = {
        standbyHolds: standby?.lease.holding(),
        standbyEverLed: standby?.logs().includes('"msg":"partition claimed"'),
        holder,
      };
    });
    const rebuilt = {
      standbyHolds: false,
      standbyEverLed: false,
      holder: expect.stringContaining("(projector rebuild)"),
    };
    expect(seen).toEqual({
      second: expect.stringContaining("(projector rebuild)"),
      lease_taken: rebuilt,
      views_purged: rebuilt,
      caught_up: rebuilt,
    });
    expect(result.jobs).toBe(10);
    expect(await Promise.all(ids.map((id) => view(hub, id)))).toEqual(before);

    // Released at the end: the standby takes over from the rebuilt durable's head, not from 1.
    const next = standby as NonNullable<typeof standby>;
    await waitFor("the standby to claim the partition", () => next.lease.holding());
    await waitFor("the standby's projector to start", () =>
      next.logs().includes('"msg":"projector started"'),
    );
    expect(next.logs()).toContain(`"from_seq":${result.events + 1}`);
    const later = await runJobs(hub, "b-later", 3);
    await viewsDone(hub, later);
    await next.stop();
  });
});
