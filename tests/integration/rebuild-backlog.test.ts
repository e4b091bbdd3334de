/**
 * A rebuild folds its whole stream as one backlog: both rebuilds report each round's undelivered
 * events to a backlog collector (the process's own unless one is given), which collects while
 * that backlog is large and so bounds the rebuilding process's memory
 * (shared/projection/backlog-collector.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rebuildIndex } from "../../services/indexer/index.ts";
import { rebuildProjection } from "../../services/projector/rebuild.ts";
import { createLogger } from "../../shared/log/index.ts";
import type { BacklogCollector } from "../../shared/projection/index.ts";
import { type IndexStore, openIndexStore } from "../../shared/search/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "acme-token-0123456789abcdef";
const JOBS = 30;
const logger = createLogger({ level: "warn", service: "test" });

let hub: TestHub;
let store: IndexStore;

/** A collector that records what each round reported. */
function recordingCollector(): BacklogCollector & { readonly reports: number[] } {
  const reports: number[] = [];
  return { reports, roundDone: (pending) => reports.push(pending) };
}

beforeAll(async () => {
  // No projector or indexer runs: each rebuild is its read model's only writer.
  hub = await startHub({ services: ["ingress", "executor"] });
  store = await openIndexStore(hub.config.index);
  const ids: string[] = [];
  for (let i = 0; i < JOBS; i++) {
    const res = await hub.run({ request_id: `rb-${i}`, route: "demo.echo", input: "x" }, TOKEN);
    expect(res.status).toBe(202);
    ids.push(((await res.json()) as { job_id: string }).job_id);
  }
  await waitFor("every echo done", async () => {
    for (const id of ids) {
      const job = (await (await hub.request(`/jobs/${id}`, { token: TOKEN })).json()) as {
        status: string;
      };
      if (job.status !== "done") return false;
    }
    return true;
  });
});

afterAll(async () => {
  await store?.close();
  await hub?.stop();
}, 30_000);

describe("rebuilds fold their stream under a backlog collector", () => {
  test("the index rebuild reports its rounds to the collector given", async () => {
    const backlog = recordingCollector();
    const { hub: connection } = hub.running;
    const result = await rebuildIndex({ ...connection, store, logger, backlog });
    expect(result.by).toBe("rebuild");
    expect(result.jobs).toBe(JOBS);
    expect(backlog.reports.length).toBeGreaterThan(0);
    expect(backlog.reports.at(-1)).toBe(0);
  }, 30_000);

  test("the projection rebuild reports its rounds to the collector given", async () => {
    const backlog = recordingCollector();
    const { hub: connection } = hub.running;
    const result = await rebuildProjection({ ...connection, logger, probeMs: 200, backlog });
    expect(result.jobs).toBe(JOBS);
    expect(backlog.reports.length).toBeGreaterThan(0);
    expect(backlog.reports.at(-1)).toBe(0);
  }, 30_000);
});
