/**
 * One delivery per event for both read models (shared/projection/shared-feed.ts): in a process
 * that runs the projector and the indexer, the index folds the projector's deliveries, and its own
 * durable is gone. A slow index never stalls the job view: with the index's table locked in
 * PostgreSQL, the index falls behind and leaves the feed while GET keeps answering every job done;
 * once the lock is gone the index catches up on its own durable, every job in it. A process whose
 * read models keep up never collects garbage itself; one catching up collects
 * (shared/projection/backlog-collector.ts). Real nats-server and PostgreSQL.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { INDEX_CONSUMER } from "../../services/indexer/index.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/postgres.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = "acme-token-0123456789abcdef";

let db: TestDatabase;
let hub: TestHub;

beforeAll(async () => {
  db = await createTestDatabase("sy_feed");
  hub = await startHub({
    yaml: `
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
index: { backend: postgres, postgres_url: "${db.url}", linger: 20ms }
`,
  });
});
afterAll(async () => {
  await hub?.stop();
  await db?.drop();
}, 60_000);

async function consumers(): Promise<{ name: string; delivered: number }[]> {
  const out: { name: string; delivered: number }[] = [];
  for await (const c of hub.running.hub.jsm.consumers.list(TOPOLOGY.eventsStream)) {
    out.push({ name: c.name, delivered: c.delivered.stream_seq });
  }
  return out;
}

/** Posts `count` runs, 50 at a time; returns their job ids. */
async function runMany(prefix: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, j) =>
      hub.run({ request_id: `${prefix}-${i + j}`, route: "demo.echo", input: "x" }, ACME),
    );
    for (const res of await Promise.all(batch)) {
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { job_id: string }).job_id);
    }
  }
  return ids;
}

/** Full collections the read models ran while folding a backlog. */
async function backlogCollections(): Promise<number> {
  const counter = await hub.running.metrics.backlogCollections.get();
  return counter.values[0]?.value ?? 0;
}

async function indexedDone(): Promise<number> {
  const sql = new SQL(db.url, { max: 1 });
  try {
    const [row] = await sql`SELECT count(*)::int AS n FROM sy_jobs WHERE status = 'done'`;
    return (row as { n: number }).n;
  } finally {
    await sql.close();
  }
}

test("the index folds the projector's deliveries: no durable of its own, every job indexed", async () => {
  await waitFor("the index on the shared feed", () =>
    hub.logs().includes("indexer folds the shared feed of its partition"),
  );
  const ids = await runMany("shared", 200);
  await waitFor("every job done in the index", async () => (await indexedDone()) === ids.length);
  const names = (await consumers()).map((c) => c.name);
  expect(names).toContain(TOPOLOGY.consumers.projector);
  expect(names).not.toContain(INDEX_CONSUMER);
  expect(await backlogCollections()).toBe(0);
});

test("a slow index leaves the feed: the views go on, and the index catches up on its own", async () => {
  const before = await indexedDone();
  const locker = new SQL(db.url, { max: 1 });
  const lock = await locker.reserve();
  await lock`BEGIN`;
  await lock`LOCK TABLE sy_jobs IN ACCESS EXCLUSIVE MODE`;
  let ids: string[] = [];
  try {
    // More events (two per job) than the index may queue, 8 rounds of 500, while its writes wait.
    ids = await runMany("slow", 3_000);
    await waitFor("the index left the feed", () =>
      hub.logs().includes("indexer fell behind the shared feed; catching up on its own durable"),
    );
    // Every view is written while the index cannot write at all.
    for (const id of ids.slice(-20)) {
      await waitFor(`job ${id} done`, async () => {
        const res = await hub.request(`/jobs/${id}`, { token: ACME });
        return ((await res.json()) as { status: string }).status === "done";
      });
    }
  } finally {
    await lock`ROLLBACK`;
    lock.release();
    await locker.close();
  }
  // The write it was waiting for ends; it takes its own durable again, from its position.
  await waitFor("the index on its own durable", async () =>
    (await consumers()).some((c) => c.name === INDEX_CONSUMER),
  );
  await waitFor(
    "every job done in the index",
    async () => (await indexedDone()) === before + ids.length,
    { timeoutMs: 60_000 },
  );
  // Thousands of events behind when it took its own durable: it collected while it caught up.
  expect(await backlogCollections()).toBeGreaterThan(0);
}, 120_000);
