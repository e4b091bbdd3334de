/**
 * A search by request_id through the job ids it names (withRequestIdLookup), on both engines: the
 * index has no request_id b-tree, so each job the request_id names in a client in scope is one key
 * lookup, its creation time read as the stream would give it (here from the jobs written). Rows
 * are written as the indexer writes them, with job ids derived as the ingress derives them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import type { JobStatus, JobView } from "../../shared/domain/index.ts";
import { createJobIdDeriver } from "../../shared/ids/index.ts";
import { type IndexStore, withRequestIdLookup } from "../../shared/search/index.ts";
import { INDEX_ENGINES } from "../helpers/index-engines.ts";

const deriveJobId = createJobIdDeriver(randomBytes(32));
const BASE = Date.parse("2026-03-01T00:00:00.000Z");

function view(input: {
  client: string;
  requestId: string;
  n: number;
  status?: JobStatus;
}): JobView {
  const at = new Date(BASE + input.n * 1000).toISOString();
  return {
    job_id: deriveJobId(input.client, input.requestId),
    client_id: input.client,
    request_id: input.requestId,
    route: "demo.echo",
    status: input.status ?? "done",
    created_at: at,
    updated_at: at,
    fingerprint: "0".repeat(64),
    seq: input.n + 1,
  };
}

// "order-1" in three clients (one of them since removed from the config: it still has rows);
// other request_ids around it.
const VIEWS = [
  view({ client: "acme", requestId: "order-1", n: 1 }),
  view({ client: "globex", requestId: "order-1", n: 2, status: "error" }),
  view({ client: "initech", requestId: "order-1", n: 3 }),
  view({ client: "acme", requestId: "order-2", n: 4 }),
  view({ client: "globex", requestId: "order-3", n: 5 }),
];

for (const [engine, open] of INDEX_ENGINES) {
  describe(`a search by request_id on ${engine}`, () => {
    let raw: IndexStore;
    let store: IndexStore;
    let cleanup: () => Promise<void>;
    let streamReachable = true;

    beforeAll(async () => {
      ({ store: raw, cleanup } = await open());
      await raw.migrate();
      const owner = await raw.claim();
      await raw.apply({
        owner,
        rows: VIEWS.map((v) => ({ view: v, tenant: undefined })),
        // One count row per (client, status), as the indexer adds them up (all in one minute).
        counts: [...new Set(VIEWS.map((v) => `${v.client_id} ${v.status}`))].map((key) => {
          const [clientId = "", status = ""] = key.split(" ");
          return {
            kind: "created" as const,
            minute: Math.floor(BASE / 60_000),
            clientId,
            route: "demo.echo",
            status,
            delta: VIEWS.filter((v) => `${v.client_id} ${v.status}` === key).length,
          };
        }),
        position: { appliedSeq: 6, pending: 0, updatedMs: 1, stream: "s" },
      });
      store = withRequestIdLookup(raw, {
        deriveJobId,
        createdMsOf: async ({ clientId, jobId }) => {
          const job = VIEWS.find((v) => v.client_id === clientId && v.job_id === jobId);
          return job === undefined ? undefined : Date.parse(job.created_at);
        },
        streamReachable: () => streamReachable,
      });
    });
    afterAll(() => cleanup());

    const jobsOf = (views: readonly JobView[]) =>
      views.map((v) => `${v.client_id}/${v.request_id}`);

    test("the clients with indexed jobs, in order", async () => {
      expect(await raw.clients()).toEqual(["acme", "globex", "initech"]);
    });

    test("without a client it finds the request_id in every client, newest first", async () => {
      const page = await store.page({ filter: { requestId: "order-1" }, limit: 50 });
      expect(jobsOf(page.views)).toEqual(["initech/order-1", "globex/order-1", "acme/order-1"]);
      expect(page.next).toBeNull();
      expect(await store.count({ requestId: "order-1" }, 100)).toBe(3);
    });

    test("it combines with the other filters and pages with a cursor", async () => {
      const done = await store.page({
        filter: { requestId: "order-1", statuses: ["done"] },
        limit: 1,
      });
      expect(jobsOf(done.views)).toEqual(["initech/order-1"]);
      expect(done.next).not.toBeNull();
      const rest = await store.page({
        filter: { requestId: "order-1", statuses: ["done"] },
        limit: 1,
        ...(done.next ? { after: done.next } : {}),
      });
      expect(jobsOf(rest.views)).toEqual(["acme/order-1"]);
      expect(rest.next).toBeNull();
      expect(await store.count({ requestId: "order-1", statuses: ["done"] }, 1)).toBe(2);
    });

    test("the clients of the filter bound it; an unknown request_id finds nothing", async () => {
      const acme = await store.page({
        filter: { requestId: "order-1", clientIds: ["acme"] },
        limit: 50,
      });
      expect(jobsOf(acme.views)).toEqual(["acme/order-1"]);
      const none = await store.page({
        filter: { requestId: "order-2", clientIds: ["globex"] },
        limit: 50,
      });
      expect(none.views).toEqual([]);
      expect((await store.page({ filter: { requestId: "nope" }, limit: 50 })).views).toEqual([]);
      expect(await store.count({ requestId: "nope" }, 10)).toBe(0);
    });

    test("jobs in the filter narrow it further", async () => {
      const keyOf = (v: JobView) => ({
        clientId: v.client_id,
        createdMs: Date.parse(v.created_at),
        jobId: v.job_id,
      });
      const [acmeOrder1, , , acmeOrder2] = VIEWS as [JobView, JobView, JobView, JobView];
      const page = await store.page({
        filter: { requestId: "order-1", jobs: [keyOf(acmeOrder1)] },
        limit: 50,
      });
      expect(page.views.map((v) => v.job_id)).toEqual([acmeOrder1.job_id]);
      const other = await store.page({
        filter: { requestId: "order-1", jobs: [keyOf(acmeOrder2)] },
        limit: 50,
      });
      expect(other.views).toEqual([]);
    });

    test("with the stream away it walks the rows for the request_id: the same answers", async () => {
      streamReachable = false;
      try {
        const page = await store.page({ filter: { requestId: "order-1" }, limit: 2 });
        expect(jobsOf(page.views)).toEqual(["initech/order-1", "globex/order-1"]);
        expect(page.next).not.toBeNull();
        expect(await store.count({ requestId: "order-1", clientIds: ["acme"] }, 10)).toBe(1);
      } finally {
        streamReachable = true;
      }
    });

    test("searches without a request_id pass through unchanged", async () => {
      const page = await store.page({ filter: { clientIds: ["globex"] }, limit: 50 });
      expect(jobsOf(page.views)).toEqual(["globex/order-3", "globex/order-1"]);
    });
  });
}
