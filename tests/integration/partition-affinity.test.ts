/**
 * At P = 4, two processes that each run both read models share the partitions, and each
 * partition's index claim ends with the member that holds its projector claim (the index follows
 * the view, shared/lease/partitions-decide.ts), so every partition's index is fed from its
 * projector's deliveries: no partition keeps an `index` durable. At P = 1 the same rule mends a
 * split: a hub holding the index's claim while another member that runs both holds the view's
 * hands the index over.
 */
import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { INDEX_CONSUMER } from "../../services/indexer/index.ts";
import {
  CLAIMS_BUCKET,
  type ClaimRecord,
  claimKey,
  createPartitionClaims,
  openClaimsBucket,
  openLeaseBucket,
} from "../../shared/lease/index.ts";
import { startHub, testIndexYaml } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const P = 4;

test("two processes running both read models: each partition's index and view claims meet", async () => {
  await using nats = await startNats();
  const yaml = testIndexYaml();
  const first = await startHub({ nats, yaml, natsOptions: { partitions: P } });
  const second = await startHub({ nats, yaml, natsOptions: { partitions: P } });
  try {
    const claims = await new Kvm(nats.nc).open(CLAIMS_BUCKET);
    const ownerOf = async (group: string, p: number) => {
      const entry = await claims.get(claimKey(group, p));
      if (entry === null || entry.operation !== "PUT") return "";
      return (entry.json() as ClaimRecord).owner;
    };
    const owners = await waitFor(
      "every partition's index claim with its projector claim's member",
      async () => {
        const pairs = [];
        for (let p = 0; p < P; p++) {
          pairs.push([await ownerOf("projector", p), await ownerOf("indexer", p)]);
        }
        const met = pairs.every(([view, index]) => view !== "" && view === index);
        // Both processes hold some: the fair share is kept.
        return met && new Set(pairs.map(([view]) => view)).size === 2 ? pairs : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(owners).toHaveLength(P);
    await waitFor(
      "no partition with an index durable",
      async () => {
        for (const stream of first.running.hub.layout.streams()) {
          const names: string[] = [];
          for await (const c of first.running.hub.jsm.consumers.list(stream)) names.push(c.name);
          if (names.includes(INDEX_CONSUMER)) return false;
        }
        return true;
      },
      { timeoutMs: 15_000, intervalMs: 250 },
    );
  } finally {
    await second.stop();
    await first.stop();
  }
}, 90_000);

test("P = 1: the index's claim goes to the member that holds the view's and runs both", async () => {
  await using nats = await startNats();
  // The other member, as another process running both read models would be: it claims the view
  // first, then competes for the index too.
  const other = createPartitionClaims({
    leases: await openLeaseBucket(nats.nc, { replicas: 1 }),
    jsm: await jetstreamManager(nats.nc),
    claims: await openClaimsBucket(nats.nc, { replicas: 1 }),
    groups: { projector: 1, indexer: 1 },
    follows: { indexer: "projector" },
    holder: "other/1",
    logger: captureLogger().logger,
  });
  const idle = { lead: async () => {}, standDown: async () => {} };
  await other.lease("projector", 0).start(idle);
  expect(other.held("projector")).toEqual([0]);
  const hub = await startHub({ nats, yaml: testIndexYaml() });
  try {
    await waitFor("the hub to claim the index", () => hub.logs().includes("partition claimed"));
    expect(other.held("indexer")).toEqual([]);
    await other.lease("indexer", 0).start(idle);
    await waitFor(
      "the other member to hold the index's claim too",
      () => other.held("indexer").includes(0),
      { timeoutMs: 20_000 },
    );
    expect(hub.logs()).toContain("partition handed to the member that holds it in projector");
    expect(hub.logs()).not.toContain('standing down"');
  } finally {
    await hub.stop();
    await other.stop();
  }
}, 60_000);
