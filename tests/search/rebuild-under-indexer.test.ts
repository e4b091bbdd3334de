/**
 * `switchyard index rebuild` under running indexers at P = 2, with runs arriving throughout: the
 * reset fences each partition's indexer at its next write, each leads again from the empty
 * position and folds its stream from the start, and the rebuild ends once every partition has
 * reached the stream's end as it was at the reset. Afterwards every job has one row, equal to its
 * view, and the per-minute counts add up to the jobs (none counted twice). On both index engines.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rebuildIndex } from "../../services/indexer/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { ReadModelRunningError, takeRebuildLease } from "../../shared/projection/index.ts";
import { type IndexStore, openIndexStore } from "../../shared/search/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/postgres.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "acme-token-0123456789abcdef";
const CLIENT = { id: "acme", token: TOKEN, routes: ["demo.*"] };
const BEFORE = 60;

let hub: TestHub;
let store: IndexStore;

const submit = async (requestId: string) => {
  const res = await hub.run({ request_id: requestId, route: "demo.echo", input: "x" }, TOKEN);
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
};

const viewOf = async (jobId: string) =>
  (await (await hub.request(`/jobs/${jobId}`, { token: TOKEN })).json()) as {
    status: string;
    updated_at: string;
  };

describe.each(["sqlite", "postgres"] as const)("on %s", (engine) => {
  let db: TestDatabase | undefined;

  beforeAll(async () => {
    if (engine === "postgres") db = await createTestDatabase("sy_rebuild");
    const yaml = db ? `index: { backend: postgres, postgres_url: "${db.url}" }` : "";
    hub = await startHub({ clients: [CLIENT], yaml, natsOptions: { partitions: 2 } });
    store = await openIndexStore(hub.config.index);
  });
  afterAll(async () => {
    await store?.close();
    await hub?.stop();
    await db?.drop();
  }, 60_000);

  test("the running indexers rebuild every partition while runs arrive; each job has one row equal to its view and is counted once", async () => {
    await rebuildWhileRunsArrive();
  }, 90_000);
});

async function rebuildWhileRunsArrive(): Promise<void> {
  const ids: string[] = [];
  for (let i = 0; i < BEFORE; i++) ids.push(await submit(`before-${i}`));
  await waitFor("every job indexed", async () => (await store.count({}, 10_000)) === BEFORE);

  // Runs keep arriving during the rebuild: the indexers are fenced by a write, not a heartbeat.
  let arriving = true;
  const during = (async () => {
    for (let i = 0; arriving; i++) {
      ids.push(await submit(`during-${i}`));
      await Bun.sleep(20);
    }
  })();
  const progress: [number, number][] = [];
  const notices: string[] = [];
  const { hub: connection } = hub.running;
  const result = await rebuildIndex({
    nc: connection.nc,
    js: connection.js,
    jsm: connection.jsm,
    layout: connection.layout,
    store,
    logger: createLogger({ level: "warn", service: "test" }),
    runningIndexer: (detail) => notices.push(detail),
    progress: (done, total) => progress.push([done, total]),
  });
  arriving = false;
  await during;

  expect(result.by).toBe("indexer");
  expect(notices).toHaveLength(1);
  expect(notices[0]).toContain("partition 0 is claimed by");
  const total = progress.at(-1)?.[1] ?? 0;
  expect(total).toBeGreaterThanOrEqual(BEFORE * 2);
  expect(progress.at(-1)?.[0]).toBe(total);
  expect(result.events).toBe(total);
  const fenced = hub.logs().split("indexer fenced; leads again if it still holds the lease");
  expect(fenced.length - 1).toBeGreaterThanOrEqual(2); // both partitions

  await waitFor(
    "every job indexed again",
    async () => (await store.count({}, 10_000)) === ids.length,
    {
      timeoutMs: 20_000,
    },
  );
  const rows = new Map<string, { status: string; updated_at: string }>();
  for await (const view of store.scan(100)) rows.set(view.job_id, view);
  expect(rows.size).toBe(ids.length);
  for (const id of ids) {
    await waitFor(`${id} done`, async () => (await viewOf(id)).status === "done");
    const view = await viewOf(id);
    expect({ id, ...rows.get(id) }).toMatchObject({
      id,
      status: view.status,
      updated_at: view.updated_at,
    });
  }
  const minute = Math.floor(Date.now() / 60_000);
  const counts = await store.counts({
    kind: "created",
    fromMinute: minute - 5,
    toMinute: minute + 5,
  });
  expect(counts.reduce((sum, c) => sum + c.count, 0)).toBe(ids.length);
}

test("while another rebuild holds the indexer's lease, a rebuild is refused and empties nothing", async () => {
  // A hub of one partition without an indexer: the lease key is free for the first rebuild.
  await using other = await startHub({ clients: [CLIENT], services: ["ingress", "executor"] });
  const otherStore = await openIndexStore(other.config.index);
  const logger = createLogger({ level: "warn", service: "test" });
  const { hub: connection } = other.running;
  try {
    const owner = await otherStore.claim(0);
    const at = new Date().toISOString();
    const position = { appliedSeq: 2, pending: 0, updatedMs: 1, stream: "s" };
    const view = {
      job_id: "job_0000000000000000000001",
      client_id: "acme",
      request_id: "seed",
      route: "demo.echo",
      status: "done" as const,
      created_at: at,
      updated_at: at,
      fingerprint: "f".repeat(64),
      seq: 2,
    };
    await otherStore.apply({ owner, rows: [{ view, tenant: undefined }], counts: [], position });
    const first = await takeRebuildLease({ ...connection, group: "indexer", partition: 0, logger });
    try {
      const refused = await rebuildIndex({ ...connection, store: otherStore, logger }).catch(
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(ReadModelRunningError);
      expect((refused as ReadModelRunningError).rebuilding).toBe(true);
      expect((refused as Error).message).toContain("(indexer rebuild)");
      expect(await otherStore.count({}, 10)).toBe(1);
    } finally {
      await first.release();
    }
  } finally {
    await otherStore.close();
  }
}, 30_000);
