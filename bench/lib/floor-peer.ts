/**
 * Starts the JetStream floor (bench/peer/floor-*.ts) as a peer: its own nats-server (temp store),
 * the floor's HTTP server and its worker. See floor-common.ts for what it measures and why.
 *
 * The split floor (`floor-split`) is the same work split along the hub's fixed service
 * boundaries (docs/architecture.md): an HTTP server, an executor, a callback step and a views
 * fold, each its own process consuming the stream. It bounds what a hub with that architecture
 * can reach, as the floor bounds any hub on this stack. The feed floor (`floor-feed`) is the split
 * floor whose views take every event of a job from one ack-all durable and write the view once the
 * job settles (bench/peer/floor-feed.ts): the JetStream work per job of the hub's own layout (five
 * deliveries, two acks), done by code that does nothing else.
 *
 * With `partitions` P > 1 (the partitions run, bench/lib/partitions.ts) the same work is spread
 * over P streams and P view buckets, jobs by the hub's partition function (floor-common.ts,
 * floorLayout), and `monitor` gives its nats-server a monitoring port so its counters are read
 * as the hub's are.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { startNatsServer } from "../../shared/nats/index.ts";
import {
  createFloorTopology,
  FLOOR_CALLBACKS,
  FLOOR_FEED,
  FLOOR_VIEWS,
  FLOOR_WORKER,
  floorLayout,
} from "../peer/floor-common.ts";
import {
  cpuProfileArgs,
  freePort,
  LOOPBACK,
  natsProfileArgs,
  ROOT,
  registerCleanup,
  registerTempDir,
  spawnChild,
} from "./common.ts";
import { createJetStreamMonitor, type JetStreamMonitor, monitorPort } from "./jetstream.ts";
import { type Peer, type PeerDeps, peerEnv } from "./peers.ts";

/** Runs in flight in the worker, as the peers' workers (PEER_CONCURRENCY). */
const CONCURRENCY = Number(process.env.PEER_CONCURRENCY ?? 64);
/** How many job.done events the views fold may hold unacked (its puts are pipelined). */
const VIEWS_IN_FLIGHT = 1024;

/** The floor's processes besides its nats-server: FLOOR_ROLE of each worker process. */
const ROLES = {
  floor: ["worker"],
  "floor-split": ["executor", "callback", "views"],
  "floor-feed": ["executor", "callback", "feed"],
} as const;

export type FloorName = keyof typeof ROLES;

/** Whether a peer name is one of the floors (BENCH_PEER names them among the peers). */
export function isFloorName(name: string): name is FloorName {
  return Object.hasOwn(ROLES, name);
}

/**
 * `bun --cpu-prof` arguments for a floor process BENCH_PROFILE names (`floor-feed-callback`, …),
 * as the hub's services get them: the floor's counterpart of a hub service profiled the same way.
 */
function profileArgs(proc: string): string[] {
  const named = (process.env.BENCH_PROFILE ?? "").split(",").includes(proc);
  return named ? cpuProfileArgs(proc) : [];
}

export interface FloorPeerOptions {
  readonly name: FloorName;
  /** Streams and view buckets the jobs are spread over (default 1: the floor of every scenario). */
  readonly partitions?: number;
  /** Start its nats-server with a monitoring port and return a monitor of its counters. */
  readonly monitor?: boolean;
  readonly waitEmpty: (
    count: () => Promise<number>,
    what: string,
    timeoutSec: number,
  ) => Promise<number>;
}

/** A running floor: a peer, with its counters when asked for, that can be stopped on its own. */
export interface FloorPeer extends Peer {
  readonly monitor?: JetStreamMonitor;
  stop(): Promise<void>;
}

export async function startFloorPeer(
  deps: PeerDeps,
  options: FloorPeerOptions,
): Promise<FloorPeer> {
  const { name } = options;
  const split = name !== "floor";
  const feed = name === "floor-feed";
  const layout = floorLayout(options.partitions);
  const storeDir = mkdtempSync(join(tmpdir(), `switchyard-bench-${name}-`));
  registerTempDir(storeDir);
  const profile = natsProfileArgs();
  const nats = await startNatsServer({
    storeDir,
    env: process.env,
    args: [...(options.monitor ? ["-m", "-1"] : []), ...profile.args],
  });
  registerCleanup(() => nats.stop("SIGKILL"));
  if (profile.url) deps.log(`${name}'s nats-server profiler at ${profile.url}`);
  const mport = options.monitor ? monitorPort(nats.output()) : undefined;
  if (options.monitor && mport === undefined) {
    throw new Error(`${name}: nats-server did not log its monitoring port:\n${nats.output()}`);
  }
  await createFloorTopology(nats.url, {
    runsInFlight: CONCURRENCY,
    viewsInFlight: VIEWS_IN_FLIGHT,
    split,
    feed,
    partitions: layout.partitions,
  });
  // The drain reads the durables' backlogs.
  const admin = await connect({ servers: nats.url, name: `${name}-bench` });
  registerCleanup(() => admin.close());
  const jsm = await jetstreamManager(admin);

  const port = freePort();
  const env = peerEnv(deps, port, {
    ...deps.floorEnv,
    NATS_URL: nats.url,
    FLOOR_PARTITIONS: String(layout.partitions),
  });
  const workers = ROLES[name].map((role) => ({
    proc: `${name}-${role}`,
    child: spawnChild(
      `${name}-${role}`,
      [deps.bun, ...profileArgs(`${name}-${role}`), join(ROOT, "bench/peer/floor-worker.ts")],
      { ...env, FLOOR_ROLE: role },
    ),
  }));
  const server = spawnChild(
    `${name}-server`,
    [deps.bun, ...profileArgs(`${name}-server`), join(ROOT, "bench/peer/floor-server.ts")],
    env,
  );
  const stopProcesses = async () => {
    await Promise.all([server.stop(), ...workers.map((w) => w.child.stop())]);
  };
  registerCleanup(stopProcesses);
  for (const w of workers) await w.child.waitForLine(/READY/);
  await server.waitForLine(/LISTENING/);
  deps.procs.trackPid(`${name}-server`, server.pid);
  for (const w of workers) deps.procs.trackPid(w.proc, w.child.pid);
  deps.procs.trackPid(`${name}-nats`, nats.pid);
  deps.log(`${name} up at http://${LOOPBACK}:${port} (nats-server ${nats.url})`);
  const durables = split
    ? [FLOOR_WORKER, FLOOR_CALLBACKS, feed ? FLOOR_FEED : FLOOR_VIEWS]
    : [FLOOR_WORKER, FLOOR_VIEWS];
  const backlog = async () => {
    let n = 0;
    for (let p = 0; p < layout.partitions; p++) {
      for (const durable of durables) {
        const info = await jsm.consumers.info(layout.stream(p), durable);
        n += info.num_pending + info.num_ack_pending;
      }
    }
    return n;
  };
  return {
    name,
    base: `http://${LOOPBACK}:${port}`,
    procs: [`${name}-server`, ...workers.map((w) => w.proc), `${name}-nats`],
    facts: {
      store: "nats-server 2.9.10 of its own (file store, temp directory)",
      per_job: feed
        ? "3 stored events + 1 KV write; 5 deliveries (executor, callback, views 3), 2 acks + the views' ack-all per 250 events; no reads"
        : split
          ? "3 stored events + 1 KV write; 3 deliveries (executor, callback, views), 3 acks; no reads"
          : "3 stored events + 1 KV write; 2 deliveries, 2 acks; no reads",
      runs_in_flight: String(CONCURRENCY),
      ...(layout.partitions > 1
        ? { partitions: `${layout.partitions} streams and view buckets, jobs by partitionOf` }
        : {}),
    },
    drain: (label, timeoutSec) => options.waitEmpty(backlog, `${name} after ${label}`, timeoutSec),
    ...(mport === undefined
      ? {}
      : { monitor: createJetStreamMonitor(`http://${LOOPBACK}:${mport}`) }),
    async stop() {
      await stopProcesses();
      await admin.close();
      await nats.stop("SIGTERM");
    },
  };
}
