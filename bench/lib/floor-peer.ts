/**
 * Starts the JetStream floor (bench/peer/floor-*.ts) as a peer: its own nats-server (temp store),
 * the floor's HTTP server and its worker. See floor-common.ts for what it measures and why.
 *
 * The split floor (`floor-split`) is the same work split along the hub's fixed service
 * boundaries (docs/architecture.md): an HTTP server, an executor, a callback step and a views
 * fold, each its own process consuming the stream. It bounds what a hub with that architecture
 * can reach, as the floor bounds any hub on this stack.
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
  FLOOR_STREAM,
  FLOOR_VIEWS,
  FLOOR_WORKER,
} from "../peer/floor-common.ts";
import {
  freePort,
  LOOPBACK,
  ROOT,
  registerCleanup,
  registerTempDir,
  spawnChild,
} from "./common.ts";
import { type Peer, type PeerDeps, peerEnv } from "./peers.ts";

/** Runs in flight in the worker, as the peers' workers (PEER_CONCURRENCY). */
const CONCURRENCY = Number(process.env.PEER_CONCURRENCY ?? 64);
/** How many job.done events the views fold may hold unacked (its puts are pipelined). */
const VIEWS_IN_FLIGHT = 1024;

/** The floor's processes besides its nats-server: FLOOR_ROLE of each worker process. */
const ROLES = {
  floor: ["worker"],
  "floor-split": ["executor", "callback", "views"],
} as const;

export interface FloorPeerOptions {
  readonly name: keyof typeof ROLES;
  readonly waitEmpty: (
    count: () => Promise<number>,
    what: string,
    timeoutSec: number,
  ) => Promise<number>;
}

export async function startFloorPeer(deps: PeerDeps, options: FloorPeerOptions): Promise<Peer> {
  const { name } = options;
  const split = name === "floor-split";
  const storeDir = mkdtempSync(join(tmpdir(), `switchyard-bench-${name}-`));
  registerTempDir(storeDir);
  const nats = await startNatsServer({ storeDir, env: process.env });
  registerCleanup(() => nats.stop("SIGKILL"));
  await createFloorTopology(nats.url, {
    runsInFlight: CONCURRENCY,
    viewsInFlight: VIEWS_IN_FLIGHT,
    split,
  });
  // The drain reads the durables' backlogs.
  const admin = await connect({ servers: nats.url, name: `${name}-bench` });
  registerCleanup(() => admin.close());
  const jsm = await jetstreamManager(admin);

  const port = freePort();
  const env = peerEnv(deps, port, { NATS_URL: nats.url });
  const workers = ROLES[name].map((role) => ({
    proc: `${name}-${role}`,
    child: spawnChild(`${name}-${role}`, [deps.bun, join(ROOT, "bench/peer/floor-worker.ts")], {
      ...env,
      FLOOR_ROLE: role,
    }),
  }));
  const server = spawnChild(
    `${name}-server`,
    [deps.bun, join(ROOT, "bench/peer/floor-server.ts")],
    env,
  );
  registerCleanup(async () => {
    await Promise.all([server.stop(), ...workers.map((w) => w.child.stop())]);
  });
  for (const w of workers) await w.child.waitForLine(/READY/);
  await server.waitForLine(/LISTENING/);
  deps.procs.trackPid(`${name}-server`, server.pid);
  for (const w of workers) deps.procs.trackPid(w.proc, w.child.pid);
  deps.procs.trackPid(`${name}-nats`, nats.pid);
  deps.log(`${name} up at http://${LOOPBACK}:${port} (nats-server ${nats.url})`);
  const durables = split
    ? [FLOOR_WORKER, FLOOR_CALLBACKS, FLOOR_VIEWS]
    : [FLOOR_WORKER, FLOOR_VIEWS];
  const backlog = async () => {
    let n = 0;
    for (const durable of durables) {
      const info = await jsm.consumers.info(FLOOR_STREAM, durable);
      n += info.num_pending + info.num_ack_pending;
    }
    return n;
  };
  return {
    name,
    base: `http://${LOOPBACK}:${port}`,
    procs: [`${name}-server`, ...workers.map((w) => w.proc), `${name}-nats`],
    facts: {
      store: "nats-server 2.9.10 of its own (file store, temp directory)",
      per_job: split
        ? "3 stored events + 1 KV write; 3 deliveries (executor, callback, views), 3 acks; no reads"
        : "3 stored events + 1 KV write; 2 deliveries, 2 acks; no reads",
      runs_in_flight: String(CONCURRENCY),
    },
    drain: (label, timeoutSec) => options.waitEmpty(backlog, `${name} after ${label}`, timeoutSec),
  };
}
