/**
 * The search index's stored side, one suite for both engines: SQLite (a temporary file) and the
 * machine's PostgreSQL (a database of its own, dropped after). Same tables, same queries, same
 * answers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { JobStatus, JobView } from "../../shared/domain/index.ts";
import {
  decodeCursor,
  encodeCursor,
  IndexFencedError,
  type IndexStore,
  type JobKey,
  type PagePosition,
} from "../../shared/search/index.ts";
import { INDEX_ENGINES } from "../helpers/index-engines.ts";

const BASE = Date.parse("2026-03-01T00:00:00.000Z");

function jobId(n: number): string {
  return `job_${String(n).padStart(22, "0")}`;
}

function view(n: number, patch: Partial<JobView> & { client?: string } = {}): JobView {
  const { client, ...rest } = patch;
  const created = new Date(BASE + Math.floor(n / 2) * 1000).toISOString(); // pairs share a time
  return {
    job_id: jobId(n),
    client_id: client ?? (n % 2 === 0 ? "acme" : "globex"),
    request_id: `r${n}`,
    route: n % 3 === 0 ? "demo.sleep" : "demo.echo",
    status: (["queued", "done", "error"] as JobStatus[])[n % 3] as JobStatus,
    created_at: created,
    updated_at: created,
    fingerprint: "0".repeat(64),
    seq: n + 1,
    ...(n % 3 === 2 ? { error: { code: n % 2 ? "boom" : "bang", message: "x" } } : {}),
    ...rest,
  };
}

/** The key of job n as view(n) makes it. */
const keyOf = (n: number): JobKey => {
  const v = view(n);
  return { clientId: v.client_id, createdMs: Date.parse(v.created_at), jobId: v.job_id };
};

for (const [engine, open] of INDEX_ENGINES) {
  describe(`index store on ${engine}`, () => {
    let store: IndexStore;
    let cleanup: () => Promise<void>;
    let owner = 0;

    beforeAll(async () => {
      ({ store, cleanup } = await open());
      await store.migrate();
      await store.migrate(); // idempotent
      owner = await store.claim();
      const rows = Array.from({ length: 60 }, (_, n) => ({
        view: view(n),
        tenant: n % 4 === 0 ? "tenant-a" : undefined,
      }));
      await store.apply({
        owner,
        rows,
        counts: [
          {
            kind: "created",
            minute: 100,
            clientId: "acme",
            route: "demo.echo",
            status: "done",
            delta: 3,
          },
          {
            kind: "created",
            minute: 101,
            clientId: "globex",
            route: "demo.echo",
            status: "done",
            delta: 2,
          },
          {
            kind: "created",
            minute: 101,
            clientId: "acme",
            route: "demo.sleep",
            status: "error",
            delta: 1,
          },
        ],
        position: { appliedSeq: 60, pending: 5, updatedMs: 1234, stream: "s1" },
      });
    });
    afterAll(async () => cleanup?.());

    test("position is stored with the rows", async () => {
      expect(await store.position()).toEqual({
        appliedSeq: 60,
        pending: 5,
        updatedMs: 1234,
        stream: "s1",
        writtenSeq: 60,
      });
      expect(await store.heartbeat([{ partition: 0, owner, pending: 0 }], 5678)).toEqual([]);
      expect(await store.position()).toEqual({
        appliedSeq: 60,
        pending: 0,
        updatedMs: 5678,
        stream: "s1",
        writtenSeq: 60,
      });
    });

    test("newest first, one client only, pages by keyset without gaps or repeats", async () => {
      const seen: string[] = [];
      let after: PagePosition | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await store.page({
          filter: { clientIds: ["acme"] },
          limit: 7,
          ...(after ? { after } : {}),
        });
        seen.push(...page.views.map((v) => v.job_id));
        expect(page.views.every((v) => v.client_id === "acme")).toBe(true);
        if (page.next === null) break;
        after = page.next;
      }
      const expected = Array.from({ length: 60 }, (_, n) => n)
        .filter((n) => n % 2 === 0)
        .sort((a, b) => b - a)
        .map(jobId);
      expect(seen).toEqual(expected);
    });

    test("jobs inserted while paging never shift the pages after the cursor", async () => {
      const first = await store.page({ filter: { clientIds: ["globex"] }, limit: 10 });
      // New jobs (newer, and one in the same second as the cursor with a greater id) arrive.
      const cursorMs = first.next?.createdMs ?? 0;
      await store.apply({
        owner,
        rows: [
          {
            view: view(1001, {
              client: "globex",
              created_at: new Date(BASE + 999_000).toISOString(),
            }),
            tenant: undefined,
          },
          {
            view: view(1003, { client: "globex", created_at: new Date(cursorMs).toISOString() }),
            tenant: undefined,
          },
        ],
        counts: [],
        position: { appliedSeq: 61, pending: 0, updatedMs: 1, stream: "s1" },
      });
      const rest: string[] = [];
      let after = first.next;
      while (after) {
        const page = await store.page({ filter: { clientIds: ["globex"] }, limit: 10, after });
        rest.push(...page.views.map((v) => v.job_id));
        after = page.next;
      }
      const all = [...first.views.map((v) => v.job_id), ...rest];
      expect(new Set(all).size).toBe(all.length);
      const odd = Array.from({ length: 30 }, (_, i) => jobId(59 - 2 * i));
      expect(all.filter((id) => odd.includes(id))).toEqual(odd);
    });

    test("each filter alone and combined", async () => {
      const ids = async (filter: Parameters<IndexStore["page"]>[0]["filter"]) =>
        (await store.page({ filter, limit: 500 })).views
          .map((v) => Number(v.job_id.slice(4)))
          .filter((n) => n < 1000); // the rows the paging test inserted
      const upTo60 = (pred: (n: number) => boolean) =>
        Array.from({ length: 60 }, (_, n) => n)
          .filter(pred)
          .sort((a, b) => b - a);
      expect(await ids({ clientIds: ["acme"], statuses: ["error"] })).toEqual(
        upTo60((n) => n % 2 === 0 && n % 3 === 2),
      );
      expect(await ids({ statuses: ["queued", "error"], routes: ["demo.echo"] })).toEqual(
        upTo60((n) => n % 3 === 2),
      );
      expect(await ids({ errorCodes: ["boom"] })).toEqual(
        upTo60((n) => n % 3 === 2 && n % 2 === 1),
      );
      expect(await ids({ tenants: ["tenant-a"], clientIds: ["acme"] })).toEqual(
        upTo60((n) => n % 4 === 0),
      );
      expect(await ids({ requestId: "r7" })).toEqual([7]);
      expect(await ids({ jobs: [keyOf(8), keyOf(9)] })).toEqual([9, 8]);
      // A key with another creation time is another job.
      expect(await ids({ jobs: [{ ...keyOf(8), createdMs: BASE }] })).toEqual([]);
      const from = BASE + 10_000;
      const before = BASE + 12_000;
      expect(await ids({ createdFromMs: from, createdBeforeMs: before })).toEqual([23, 22, 21, 20]);
      expect(await ids({ clientIds: ["nobody"] })).toEqual([]);
    });

    test("a row only moves forward in the stream and keeps its tenant", async () => {
      const original = view(4);
      await store.apply({
        owner,
        rows: [{ view: { ...original, status: "done", seq: 2 }, tenant: undefined }],
        counts: [],
        position: { appliedSeq: 61, pending: 0, updatedMs: 1, stream: "s1" },
      });
      let loaded = await store.load([keyOf(4)]);
      expect(loaded.get(`acme.${jobId(4)}`)?.status).toBe(original.status);
      // The highest sequence written (1004, the paging test's) never falls back.
      expect((await store.position()).writtenSeq).toBe(1004);
      await store.apply({
        owner,
        rows: [
          {
            view: {
              ...original,
              status: "done",
              seq: 2_000,
              callback: { status: "failed", attempts: 3 },
            },
            tenant: undefined,
          },
        ],
        counts: [],
        position: { appliedSeq: 62, pending: 0, updatedMs: 1, stream: "s1" },
      });
      loaded = await store.load([keyOf(4), { ...keyOf(5), clientId: "acme" }]);
      expect(loaded.get(`acme.${jobId(4)}`)?.status).toBe("done");
      expect(loaded.size).toBe(1);
      expect((await store.position()).writtenSeq).toBe(2_000);
      const byTenant = await store.page({
        filter: { tenants: ["tenant-a"], callbackStatuses: ["failed"] },
        limit: 5,
      });
      expect(byTenant.views.map((v) => v.job_id)).toEqual([jobId(4)]);
    });

    test("per-minute totals; optimize refreshes the planner's statistics", async () => {
      const series = await store.perMinute({ kind: "created", fromMinute: 100, toMinute: 102 });
      expect([...series.entries()].sort()).toEqual([
        [100, 3],
        [101, 3],
      ]);
      await store.optimize();
      expect(await store.count({ clientIds: ["acme"] }, 1000)).toBe(30);
    });

    test("count is capped; counts add up per route and status over a window", async () => {
      expect(await store.count({ clientIds: ["acme"] }, 1000)).toBe(30);
      expect(await store.count({}, 10)).toBe(11);
      expect(await store.counts({ kind: "created", fromMinute: 100, toMinute: 102 })).toEqual([
        { route: "demo.echo", status: "done", count: 5 },
        { route: "demo.sleep", status: "error", count: 1 },
      ]);
      expect(
        await store.counts({
          kind: "created",
          fromMinute: 101,
          toMinute: 102,
          clientIds: ["acme"],
        }),
      ).toEqual([{ route: "demo.sleep", status: "error", count: 1 }]);
      await store.apply({
        owner,
        rows: [],
        counts: [
          {
            kind: "created",
            minute: 101,
            clientId: "acme",
            route: "demo.sleep",
            status: "error",
            delta: -1,
          },
        ],
        position: { appliedSeq: 62, pending: 0, updatedMs: 1, stream: "s1" },
      });
      expect(
        await store.counts({
          kind: "created",
          fromMinute: 101,
          toMinute: 102,
          clientIds: ["acme"],
        }),
      ).toEqual([]);
    });

    test("a newer claim fences the older writer", async () => {
      const newer = await store.claim();
      expect(newer).toBe(owner + 1);
      const position = { appliedSeq: 62, pending: 0, updatedMs: 1, stream: "s1" };
      const write = { rows: [], counts: [], position };
      expect(store.apply({ ...write, owner })).rejects.toBeInstanceOf(IndexFencedError);
      await store.apply({ ...write, owner: newer });
      owner = newer;
    });

    test("scan yields every row once; prune and reset remove rows", async () => {
      const scanned: string[] = [];
      for await (const v of store.scan(7)) scanned.push(`${v.client_id}.${v.job_id}`);
      expect(scanned.length).toBe(62);
      expect(new Set(scanned).size).toBe(62);
      expect(await store.prune(BASE + 2_000)).toBe(4);
      expect(await store.count({}, 1000)).toBe(58);
      await store.reset();
      expect(await store.count({}, 1000)).toBe(0);
      expect((await store.position()).appliedSeq).toBe(0);
    });

    test("a reset fences the writer: its writes and heartbeats are refused until it claims again", async () => {
      const position = { appliedSeq: 70, pending: 0, updatedMs: 1, stream: "s1" };
      const write = { rows: [{ view: view(70), tenant: undefined }], counts: [], position };
      owner = await store.claim();
      await store.apply({ ...write, owner });
      expect(await store.count({}, 1000)).toBe(1);
      await store.reset();
      expect(store.apply({ ...write, owner })).rejects.toBeInstanceOf(IndexFencedError);
      expect(await store.heartbeat([{ partition: 0, owner, pending: 0 }], 2)).toEqual([0]);
      expect(await store.count({}, 1000)).toBe(0);
      expect((await store.position()).appliedSeq).toBe(0);
      owner = await store.claim();
      expect(await store.heartbeat([{ partition: 0, owner, pending: 0 }], 3)).toEqual([]);
      await store.apply({ ...write, owner });
      expect(await store.count({}, 1000)).toBe(1);
    });
  });
}

describe("cursor", () => {
  test("round trip, and anything else is refused", () => {
    const position = { createdMs: BASE, jobId: jobId(3) };
    expect(decodeCursor(encodeCursor(position))).toEqual(position);
    for (const bad of [
      "",
      "x",
      "!!",
      Buffer.from(`2.${BASE}.${jobId(3)}`).toString("base64url"),
      Buffer.from(`1.-5.${jobId(3)}`).toString("base64url"),
      Buffer.from(`1.5.job_x`).toString("base64url"),
      "a".repeat(200),
    ]) {
      expect(decodeCursor(bad)).toBeUndefined();
    }
  });
});
