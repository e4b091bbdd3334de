/**
 * A projector whose lease renewal runs late (holding() false for a moment, then true again, with
 * no stand-down in between: seen on an R3 cluster under load) writes and acknowledges nothing
 * while it is not held, then folds on. It used to stop its loop for good at the first round that
 * found the lease not held, and the views of every later job stayed behind (the durable stuck
 * with thousands pending; tests/faults/replicas.test.ts on R3 failed about 1 run in 3).
 */
import { expect, test } from "bun:test";
import { createProjector } from "../../services/projector/index.ts";
import { jobViewKey, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import type { Lease } from "../../shared/lease/index.ts";
import { startHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "acme-token-0123456789abcdef";

/** A lease held from the start whose holding() the test switches, as a late renewal does. */
function switchableLease() {
  let held = true;
  const lease: Lease = {
    async start(handlers) {
      await handlers.lead();
    },
    holding: () => held,
    async stop() {},
  };
  return {
    lease,
    set(value: boolean) {
      held = value;
    },
  };
}

test("a lease renewal that runs late pauses the projector; it folds on once the lease is held", async () => {
  // Ingress and executor only: the test runs the projector itself.
  await using hub = await startHub({ services: ["ingress", "executor"] });
  const { hub: conn } = hub.running;
  const { lease, set } = switchableLease();
  const projector = createProjector({
    layout: SINGLE_PARTITION_LAYOUT,
    nc: conn.nc,
    js: conn.js,
    jsm: conn.jsm,
    kv: conn.jobs,
    logger: captureLogger().logger,
    lease,
  });
  await projector.start();
  try {
    const submit = async (prefix: string) => {
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) {
        const res = await hub.run(
          { request_id: `${prefix}-${i}`, route: "demo.echo", input: "x" },
          TOKEN,
        );
        ids.push(((await res.json()) as { job_id: string }).job_id);
      }
      return ids;
    };
    const done = async (ids: string[]) => {
      for (const id of ids) {
        const entry = await conn.jobs.get(jobViewKey({ client_id: "acme", job_id: id }));
        if (entry?.json<{ status: string }>().status !== "done") return false;
      }
      return true;
    };
    const before = await submit("before");
    await waitFor("the first jobs' views", () => done(before), { timeoutMs: 10_000 });

    set(false); // the renewal is late: nothing may be written now
    const during = await submit("during");
    await Bun.sleep(500);
    for (const id of during) {
      const entry = await conn.jobs.get(jobViewKey({ client_id: "acme", job_id: id }));
      expect(entry?.json<{ status: string }>().status ?? "absent").not.toBe("done");
    }

    set(true); // renewed after all: the projector goes on, with what it held and what came since
    const after = await submit("after");
    await waitFor("every view once the lease is held again", () => done([...during, ...after]), {
      timeoutMs: 10_000,
    });
    const info = await conn.jsm.consumers.info("SWITCHYARD_EVENTS", "projector");
    await waitFor("everything acknowledged", async () => {
      const now = await conn.jsm.consumers.info("SWITCHYARD_EVENTS", "projector");
      return now.num_pending === 0 && now.num_ack_pending === 0;
    });
    expect(info.num_redelivered).toBe(0);
  } finally {
    await projector.stop();
  }
});
