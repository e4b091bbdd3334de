/**
 * CPU per row of the search index's write path (issue 16's "without raising its CPU per job by
 * more than 15%"): the indexer's transactions as the e2e closed loop makes them (125 settled jobs
 * a round with random job ids, three count rows, the position), on SQLite, after a prefill.
 * Request ids are random UUIDs, as callers make them ('"requestIds": "sequential"' for bench-0,
 * bench-1, ...). Prints one JSON line: user and system CPU µs per row. Used to choose the index's b-trees and
 * checkpoint interval (docs/performance.md, "The search index"):
 *   bun bench/index-write.ts '{"prefill":100000,"rows":50000}'
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JobView } from "../shared/domain/index.ts";
import { type CountDelta, openSqliteIndex } from "../shared/search/index.ts";

const spec = {
  prefill: 100_000,
  rows: 50_000,
  batch: 125,
  requestIds: "uuid",
  ...JSON.parse(process.argv[2] ?? "{}"),
};

/** A settled echo job as the projector folds it: done, callback delivered. */
function settledJob(n: number): JobView {
  const at = new Date(Date.now() + n).toISOString();
  return {
    job_id: `job_${randomBytes(17).toString("base64url").slice(0, 22)}`,
    client_id: "acme",
    request_id: spec.requestIds === "sequential" ? `bench-${n}` : randomUUID(),
    route: "bench.echo",
    status: "done",
    created_at: at,
    updated_at: at,
    completed_at: at,
    output: { echo: "x".repeat(40) },
    callback: { status: "delivered", attempts: 1, last_attempt_at: at },
    fingerprint: "f".repeat(64),
    seq: n * 3,
  };
}

const dir = mkdtempSync(join(tmpdir(), "switchyard-index-write-"));
try {
  const store = openSqliteIndex(join(dir, "index.db"));
  await store.migrate();
  const owner = await store.claim();
  let n = 0;
  const round = async () => {
    const rows = Array.from({ length: spec.batch }, () => ({
      view: settledJob(n++),
      tenant: undefined,
    }));
    const count = (kind: string, status: string): CountDelta => ({
      kind: kind as CountDelta["kind"],
      minute: Math.floor(Date.now() / 60_000),
      clientId: "acme",
      route: "bench.echo",
      status,
      delta: spec.batch,
    });
    await store.apply({
      owner,
      rows,
      counts: [
        count("created", "done"),
        count("completed", "done"),
        count("callback", "delivered"),
      ],
      position: { appliedSeq: n * 3, pending: 0, updatedMs: Date.now(), stream: "bench" },
    });
  };
  while (n < spec.prefill) await round();
  const before = process.cpuUsage();
  const started = performance.now();
  const end = n + spec.rows;
  while (n < end) await round();
  const cpu = process.cpuUsage(before);
  const per = (us: number) => Math.round((us / spec.rows) * 10) / 10;
  console.log(
    JSON.stringify({
      prefill: spec.prefill,
      rows: spec.rows,
      batch: spec.batch,
      requestIds: spec.requestIds,
      cpuUsPerRow: per(cpu.user + cpu.system),
      userUsPerRow: per(cpu.user),
      systemUsPerRow: per(cpu.system),
      wallUsPerRow: per((performance.now() - started) * 1000),
    }),
  );
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
