/**
 * The indexer against a real nats-server: every job of the stream ends in the index once, with
 * the same view the projector folds; an indexer whose connection dies mid-way is replaced by
 * another that continues from the index's own position without counting any job twice; an index
 * of another stream is rebuilt.
 */
import { describe, expect, test } from "bun:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createIndexer } from "../../services/indexer/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { IndexFencedError } from "../../shared/search/index.ts";
import { createWorker } from "../../shared/worker/index.ts";
import { startHub } from "../helpers/hub.ts";
import { INDEX_ENGINES } from "../helpers/index-engines.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "acme-token-0123456789abcdef";

/** demo.echo, and demo.held: a NATS worker's route, open until the test starts a worker. */
const HELD_ROUTES = `
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.held
    executor: { kind: nats }
`;

for (const [engine, open] of INDEX_ENGINES) {
  describe(`indexer on ${engine}`, () => {
    test("a replacement continues from the index's position, fences the old one, and counts nothing twice", async () => {
      await using nats = await startNats();
      const { store, cleanup } = await open();
      await store.migrate();
      try {
        // Ingress and executor only: this test runs the indexer itself.
        await using hub = await startHub({ nats, services: ["ingress", "executor"] });
        const ids: string[] = [];
        for (let i = 0; i < 300; i++) {
          const res = await hub.run(
            { request_id: `ix-${i}`, route: "demo.echo", input: "x" },
            TOKEN,
          );
          ids.push(((await res.json()) as { job_id: string }).job_id);
        }
        const { logger } = captureLogger();
        const first = await connect({ servers: nats.url });
        // The first indexer writes slowly (a real store, each transaction 20 ms later), so it is
        // surely mid-way when its connection dies.
        let epochA = 0;
        const slow = {
          ...store,
          claim: async () => {
            epochA = await store.claim();
            return epochA;
          },
          apply: async (w: Parameters<typeof store.apply>[0]) => {
            await Bun.sleep(20);
            await store.apply(w);
          },
        };
        const indexerA = createIndexer({
          layout: SINGLE_PARTITION_LAYOUT,
          nc: first,
          js: jetstream(first),
          jsm: await jetstreamManager(first),
          store: slow,
          logger,
          lingerMs: 0,
          maxBatch: 20,
        });
        await indexerA.start();
        await waitFor(
          "a first part to be indexed",
          async () => (await store.count({}, 1000)) >= 50,
        );
        await first.close(); // the process dies: what it held is not committed
        expect(await store.count({}, 1000)).toBeLessThan(300);
        const second = await connect({ servers: nats.url });
        const indexerB = createIndexer({
          layout: SINGLE_PARTITION_LAYOUT,
          nc: second,
          js: jetstream(second),
          jsm: await jetstreamManager(second),
          store,
          logger,
        });
        await indexerB.start();
        // The replacement's claim fences the old one: a write of the old epoch is refused.
        expect(epochA).toBeGreaterThan(0);
        const { writtenSeq: _, ...positionAtClaim } = await store.position();
        await expect(
          store.apply({ owner: epochA, rows: [], counts: [], position: positionAtClaim }),
        ).rejects.toBeInstanceOf(IndexFencedError);
        await waitFor(
          "every job done in the index",
          async () => (await store.count({ statuses: ["done"] }, 1000)) === 300,
          { timeoutMs: 20_000 },
        );
        await indexerB.stop();
        await indexerA.stop().catch(() => undefined);
        await second.close();
        const page = await store.page({ filter: { clientIds: ["acme"] }, limit: 500 });
        expect(page.views.map((v) => v.job_id).sort()).toEqual([...ids].sort());
        const res = await hub.request(`/jobs/${ids[7]}`, { token: TOKEN });
        const got = (await res.json()) as { status: string; output: unknown; created_at: string };
        const row = page.views.find((v) => v.job_id === ids[7]);
        expect(String(row?.status)).toBe(got.status);
        expect(row?.output).toEqual(got.output);
        expect(String(row?.created_at)).toBe(got.created_at);
        // Counts: each job once, in its final status.
        const now = Math.floor(Date.now() / 60_000);
        const counts = await store.counts({
          kind: "created",
          fromMinute: now - 10,
          toMinute: now + 2,
        });
        expect(counts).toEqual([{ route: "demo.echo", status: "done", count: 300 }]);
        const completed = await store.counts({
          kind: "completed",
          fromMinute: now - 10,
          toMinute: now + 2,
        });
        expect(completed).toEqual([{ route: "demo.echo", status: "done", count: 300 }]);
      } finally {
        await cleanup();
      }
    }, 60_000);

    test("a new job's row is not read; rows written above the position are, after a restart", async () => {
      await using nats = await startNats();
      const { store, cleanup } = await open();
      await store.migrate();
      try {
        await using hub = await startHub({
          nats,
          services: ["ingress", "executor"],
          yaml: HELD_ROUTES,
        });
        // A job that stays open holds the position below every later job the indexer writes:
        // a NATS worker's task, finished only once a worker starts (after the first indexer).
        await hub.run({ request_id: "held-open", route: "demo.held", input: "x" }, TOKEN);
        for (let i = 0; i < 40; i++) {
          await hub.run({ request_id: `above-${i}`, route: "demo.echo", input: "x" }, TOKEN);
        }
        let loadedKeys = 0;
        const counting = {
          ...store,
          load: (keys: Parameters<typeof store.load>[0]) => {
            loadedKeys += keys.length;
            return store.load(keys);
          },
        };
        const { logger } = captureLogger();
        const first = await connect({ servers: nats.url });
        const indexerA = createIndexer({
          layout: SINGLE_PARTITION_LAYOUT,
          nc: first,
          js: jetstream(first),
          jsm: await jetstreamManager(first),
          store: counting,
          logger,
          lingerMs: 60_000,
        });
        await indexerA.start();
        await waitFor(
          "the echo jobs to be indexed",
          async () => (await store.count({ statuses: ["done"] }, 100)) === 40,
        );
        // Every job began with its run.requested on a fresh index: not one row was read.
        expect(loadedKeys).toBe(0);
        const position = await store.position();
        expect(position.writtenSeq).toBeGreaterThan(position.appliedSeq);
        await first.close(); // dies holding the open job
        const worker = createWorker({
          nc: nats.nc,
          route: "demo.held",
          handler: async () => "released",
        });
        await worker.start();
        const second = await connect({ servers: nats.url });
        const indexerB = createIndexer({
          layout: SINGLE_PARTITION_LAYOUT,
          nc: second,
          js: jetstream(second),
          jsm: await jetstreamManager(second),
          store: counting,
          logger,
        });
        await indexerB.start();
        await waitFor(
          "every job done in the index",
          async () => (await store.count({ statuses: ["done"] }, 100)) === 41,
          { timeoutMs: 20_000 },
        );
        await worker.stop();
        await indexerB.stop();
        await indexerA.stop().catch(() => undefined);
        await second.close();
        // The echo jobs came again from the position: their rows were read, not counted again.
        expect(loadedKeys).toBeGreaterThanOrEqual(40);
        const now = Math.floor(Date.now() / 60_000);
        const window = { fromMinute: now - 10, toMinute: now + 2 };
        expect(await store.counts({ kind: "created", ...window })).toEqual([
          { route: "demo.echo", status: "done", count: 40 },
          { route: "demo.held", status: "done", count: 1 },
        ]);
        expect(await store.counts({ kind: "completed", ...window })).toEqual([
          { route: "demo.echo", status: "done", count: 40 },
          { route: "demo.held", status: "done", count: 1 },
        ]);
      } finally {
        await cleanup();
      }
    }, 60_000);

    test("an index of another events stream is rebuilt from this one", async () => {
      await using nats = await startNats();
      const { store, cleanup } = await open();
      await store.migrate();
      await store.apply({
        owner: await store.claim(),
        rows: [],
        counts: [
          { kind: "created", minute: 1, clientId: "old", route: "r", status: "done", delta: 5 },
        ],
        position: { appliedSeq: 9_999, pending: 0, updatedMs: 1, stream: "another stream" },
      });
      try {
        await using hub = await startHub({ nats, services: ["ingress", "executor"] });
        await hub.run({ request_id: "other-1", route: "demo.echo", input: "x" }, TOKEN);
        const nc = await connect({ servers: nats.url });
        const indexer = createIndexer({
          layout: SINGLE_PARTITION_LAYOUT,
          nc,
          js: jetstream(nc),
          jsm: await jetstreamManager(nc),
          store,
          logger: captureLogger().logger,
        });
        await indexer.start();
        await waitFor("the job to be indexed", async () => (await store.count({}, 10)) === 1);
        await indexer.stop();
        await nc.close();
        expect(await store.counts({ kind: "created", fromMinute: 0, toMinute: 10 })).toEqual([]);
        expect((await store.position()).appliedSeq).toBeLessThan(100);
      } finally {
        await cleanup();
      }
    });
  });
}
