/**
 * A hub of 4 partitions on one nats-server (issue 27): runs are accepted on every partition's
 * stream, executed, projected into their partition's view bucket, and found by GET and cancel
 * from the job id alone; a start with a different nats.partitions is refused naming the key.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { parseConfig } from "../../shared/config/index.ts";
import { connectHub } from "../../shared/hub/index.ts";
import { createEventLayout } from "../../shared/jobs/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = "acme-token-0123456789abcdef";
const P = 4;
const ROUTES = `
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.long
    executor: { kind: builtin, name: sleep, sleep_ms: 30000 }
index: { enabled: false }
`;

let hub: TestHub;

beforeAll(async () => {
  hub = await startHub({ yaml: ROUTES, natsOptions: { partitions: P } });
});
afterAll(async () => hub?.stop());

describe("a hub of 4 partitions", () => {
  test("runs spread over all 4 streams, end done, and GET finds each from its id alone", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await hub.run({ request_id: `r-${i}`, route: "demo.echo", input: "x" }, ACME);
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { job_id: string }).job_id);
    }
    const jsm = await jetstreamManager(hub.nats.nc);
    const layout = createEventLayout(P);
    const runs: number[] = [];
    for (let p = 0; p < P; p++) {
      const info = await jsm.streams.info(layout.stream(p), {
        subjects_filter: layout.filters.kind(p, "run"),
      });
      runs.push(Object.keys(info.state.subjects ?? {}).length);
    }
    expect(runs.reduce((a, b) => a + b, 0)).toBe(40);
    for (const count of runs) expect(count).toBeGreaterThan(0);
    await expect(jsm.streams.info("SWITCHYARD_EVENTS")).rejects.toThrow();
    for (const id of ids) {
      await waitFor(`${id} done`, async () => {
        const res = await hub.request(`/jobs/${id}`, { token: ACME });
        return res.status === 200 && ((await res.json()) as { status: string }).status === "done";
      });
    }
    // The views are in their partition's bucket.
    const views: number[] = [];
    for (let p = 0; p < P; p++) {
      const info = await jsm.streams.info(`KV_${layout.viewBucket(p)}`);
      views.push(info.state.messages);
    }
    expect(views).toEqual(runs);
    // A repeat of a request lands on the same job (idempotency per partition).
    const again = await hub.run({ request_id: "r-7", route: "demo.echo", input: "x" }, ACME);
    expect(((await again.json()) as { job_id: string }).job_id).toBe(ids[7] as string);
  });

  test("cancel finds the job's partition from its id", async () => {
    const res = await hub.run({ request_id: "long-1", route: "demo.long", input: "x" }, ACME);
    const { job_id } = (await res.json()) as { job_id: string };
    const cancel = await hub.request(`/jobs/${job_id}/cancel`, { method: "POST", token: ACME });
    expect([200, 202]).toContain(cancel.status);
    await waitFor("cancelled", async () => {
      const got = await hub.request(`/jobs/${job_id}`, { token: ACME });
      const body = (await got.json()) as { status: string; error?: { code: string } };
      return body.status === "error" && body.error?.code === "cancelled";
    });
  });

  test("a start with another nats.partitions is refused, naming the key and both counts", async () => {
    const config = parseConfig(
      JSON.stringify({ nats: { url: hub.nats.url, partitions: 2 } }),
      {},
      "test config",
    );
    const { logger } = captureLogger();
    const refused = await connectHub(config, logger, "test").then(
      () => undefined,
      (err: unknown) => err as Error & { code?: string },
    );
    expect(refused?.code).toBe("partitions_mismatch");
    expect(refused?.message).toContain("nats.partitions is 2");
    expect(refused?.message).toContain("created with 4 partitions");
  });
});
