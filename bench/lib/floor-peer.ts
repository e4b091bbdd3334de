/**
 * Starts the JetStream floor (bench/peer/floor-*.ts) as a peer: its own nats-server (temp store),
 * the floor's HTTP server and its worker. See floor-common.ts for what it measures and why.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { startNatsServer } from "../../shared/nats/index.ts";
import {
  createFloorTopology,
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

export async function startFloorPeer(
  deps: PeerDeps,
  waitEmpty: (count: () => Promise<number>, what: string, timeoutSec: number) => Promise<number>,
): Promise<Peer> {
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-bench-floor-"));
  registerTempDir(storeDir);
  const nats = await startNatsServer({ storeDir, env: process.env });
  registerCleanup(() => nats.stop("SIGKILL"));
  await createFloorTopology(nats.url, {
    runsInFlight: CONCURRENCY,
    viewsInFlight: VIEWS_IN_FLIGHT,
  });
  // The drain reads both durables' backlogs.
  const admin = await connect({ servers: nats.url, name: "floor-bench" });
  registerCleanup(() => admin.close());
  const jsm = await jetstreamManager(admin);

  const port = freePort();
  const env = peerEnv(deps, port, { NATS_URL: nats.url });
  const worker = spawnChild(
    "floor-worker",
    [deps.bun, join(ROOT, "bench/peer/floor-worker.ts")],
    env,
  );
  const server = spawnChild(
    "floor-server",
    [deps.bun, join(ROOT, "bench/peer/floor-server.ts")],
    env,
  );
  registerCleanup(async () => {
    await Promise.all([server.stop(), worker.stop()]);
  });
  await worker.waitForLine(/READY/);
  await server.waitForLine(/LISTENING/);
  deps.procs.trackPid("floor-server", server.pid);
  deps.procs.trackPid("floor-worker", worker.pid);
  deps.procs.trackPid("floor-nats", nats.pid);
  deps.log(`JetStream floor up at http://${LOOPBACK}:${port} (nats-server ${nats.url})`);
  const backlog = async () => {
    let n = 0;
    for (const durable of [FLOOR_WORKER, FLOOR_VIEWS]) {
      const info = await jsm.consumers.info(FLOOR_STREAM, durable);
      n += info.num_pending + info.num_ack_pending;
    }
    return n;
  };
  return {
    name: "floor",
    base: `http://${LOOPBACK}:${port}`,
    procs: ["floor-server", "floor-worker", "floor-nats"],
    facts: {
      store: "nats-server 2.9.10 of its own (file store, temp directory)",
      per_job: "3 stored events + 1 KV write; 2 deliveries, 2 acks; no reads",
      runs_in_flight: String(CONCURRENCY),
    },
    drain: (label, timeoutSec) => waitEmpty(backlog, `JetStream floor after ${label}`, timeoutSec),
  };
}
