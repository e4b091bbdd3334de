/**
 * One delivery for both read models needs both leases in one process (P = 1). A process that runs
 * both and holds only the indexer's lease hands it over when the projector's holder runs both too
 * (its lease record says so), and keeps it when that holder runs the projector alone. The other
 * holder is played by this test: it writes and renews the projector's lease record itself.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { KV } from "@nats-io/kv";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { openLeaseBucket } from "../../shared/lease/index.ts";
import { startHub } from "../helpers/hub.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const PROJECTOR = SINGLE_PARTITION_LAYOUT.leaseKey("projector", 0);
const INDEXER = SINGLE_PARTITION_LAYOUT.leaseKey("indexer", 0);
const HANDING = "handing the indexer's lease to it";

let nats: TestNats;
let kv: KV;

beforeAll(async () => {
  nats = await startNats();
  kv = await openLeaseBucket(nats.nc, { replicas: 1 });
});
afterAll(async () => nats?.stop());

/** Holds the projector's lease as another process would, renewing it every second. */
async function holdProjectorLease(colocated: boolean) {
  const record = () =>
    JSON.stringify({ holder: "elsewhere/1", renewed_at: new Date().toISOString(), colocated });
  let revision = await kv.create(PROJECTOR, record());
  const timer = setInterval(async () => {
    revision = await kv.update(PROJECTOR, record(), revision).catch(() => revision);
  }, 1_000);
  return {
    async release() {
      clearInterval(timer);
      await kv.delete(PROJECTOR);
    },
  };
}

test("the indexer's lease goes to the projector's holder when that process runs both", async () => {
  const other = await holdProjectorLease(true);
  const hub = await startHub({ nats });
  try {
    await waitFor("the hub hands the indexer's lease over", () => hub.logs().includes(HANDING), {
      timeoutMs: 15_000,
    });
    // Released: the other process (here, this test) takes it at once.
    const taken = await waitFor("the indexer's lease free", () =>
      kv.create(INDEXER, JSON.stringify({ holder: "elsewhere/1" })).catch(() => false),
    );
    expect(taken).toBeGreaterThan(0);
    expect(hub.logs()).not.toContain('"msg":"lease lost; standing down"');
  } finally {
    await hub.stop();
    await kv.delete(INDEXER);
    await other.release();
  }
});

test("a projector holder that runs no indexer is left alone: the indexer's lease stays", async () => {
  const other = await holdProjectorLease(false);
  const hub = await startHub({ nats });
  try {
    await waitFor("the hub's indexer leads", () => hub.logs().includes('"msg":"indexer started"'));
    // Two affinity checks (every 5 s) later it still holds the lease.
    await Bun.sleep(11_000);
    expect(hub.logs()).not.toContain(HANDING);
    expect(hub.running.hub.layout.partitions).toBe(1);
    const entry = await kv.get(INDEXER);
    expect(entry?.operation).toBe("PUT");
  } finally {
    await hub.stop();
    await other.release();
  }
}, 30_000);
