/**
 * A store written before partitions has no `partitions` record in sy_meta: it is a
 * single-partition store and opens unchanged (same stream, bucket and subjects), its jobs are
 * served, and a start with another nats.partitions is refused naming the key.
 */
import { expect, test } from "bun:test";
import { Kvm } from "@nats-io/kv";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { parseConfig } from "../../shared/config/index.ts";
import { connectHub } from "../../shared/hub/index.ts";
import { DEFAULT_CLIENTS, startHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = (DEFAULT_CLIENTS[0] as (typeof DEFAULT_CLIENTS)[0]).token;

test("a store without a partitions record is P = 1: it opens unchanged and refuses P = 4", async () => {
  await using nats = await startNats();
  const jobs: string[] = [];
  {
    await using first = await startHub({ nats });
    for (let i = 0; i < 5; i++) {
      const res = await first.run({ request_id: `old-${i}`, route: "demo.echo", input: "x" }, ACME);
      jobs.push(((await res.json()) as { job_id: string }).job_id);
    }
    await waitFor("the jobs done", async () => {
      for (const id of jobs) {
        const res = await first.request(`/jobs/${id}`, { token: ACME });
        if (((await res.json()) as { status?: string }).status !== "done") return false;
      }
      return true;
    });
  }
  // What the code before partitions left: the same names, and no partitions record.
  const meta = await new Kvm(nats.nc).open(TOPOLOGY.metaBucket);
  expect((await meta.get("partitions"))?.string()).toBe("1");
  await meta.purge("partitions");

  await using again = await startHub({ nats });
  for (const id of jobs) {
    const res = await again.request(`/jobs/${id}`, { token: ACME });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("done");
  }
  const names: string[] = [];
  for await (const s of again.running.hub.jsm.streams.list()) names.push(s.config.name);
  expect(names).toContain("SWITCHYARD_EVENTS");
  expect(names).toContain("KV_sy_jobs");
  expect(names.some((n) => /_P\d+$|_p\d+$/.test(n))).toBe(false);
  // Nothing was written for it: the absence of a record keeps meaning one partition.
  const record = await meta.get("partitions");
  expect(record === null || record.operation !== "PUT").toBe(true);

  const config = parseConfig(
    JSON.stringify({ nats: { url: nats.url, partitions: 4 } }),
    {},
    "test config",
  );
  const refused = await connectHub(config, captureLogger().logger, "test").then(
    () => undefined,
    (err: unknown) => err as Error & { code?: string },
  );
  expect(refused?.code).toBe("partitions_mismatch");
  expect(refused?.message).toContain("nats.partitions is 4");
  expect(refused?.message).toContain("created with 1 partitions");
});
