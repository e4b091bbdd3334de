/**
 * A projector that takes the lease but cannot start folding (a JetStream request timed out while
 * it recreated its durable) must not keep the lease: holding it with nothing consumed stopped
 * every view in every replica. The failed one releases it, a standby takes it at once, and the
 * failed one competes again after sitting out. (A rolling restart under load hit this in CI: the
 * restarted projector won the lease, its durable's recreation timed out, and no view moved.)
 */
import { expect, test } from "bun:test";
import type { JetStreamManager } from "@nats-io/jetstream";
import { createProjector } from "../../services/projector/index.ts";
import { jobViewKey, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import {
  createLease,
  openLeaseBucket,
  SIT_OUT_AFTER_FAILED_LEAD_MS,
} from "../../shared/lease/index.ts";
import { startHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "lead-token-0123456789abcdef";

/** The manager, with its first `failures` consumer creations failing as a timed-out request. */
function failingConsumerAdds(jsm: JetStreamManager, failures: number) {
  const state = { failed: 0 };
  const consumers = new Proxy(jsm.consumers, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property !== "add") return typeof value === "function" ? value.bind(target) : value;
      return async (...args: Parameters<typeof target.add>) => {
        if (state.failed < failures) {
          state.failed++;
          throw new Error("TIMEOUT");
        }
        return target.add(...args);
      };
    },
  });
  const wrapped = new Proxy(jsm, {
    get: (target, property) =>
      property === "consumers" ? consumers : Reflect.get(target, property, target),
  });
  return { jsm: wrapped, state };
}

test("a projector whose start fails under the lease releases it; the standby folds, then the failed one leads again", async () => {
  await using hub = await startHub({
    services: ["ingress", "executor"],
    clients: [{ id: "acme", token: TOKEN, routes: ["demo.*"] }],
  });
  const { hub: conn } = hub.running;
  const leases = await openLeaseBucket(conn.nc, { replicas: 1 });
  const replica = (name: string, jsm: JetStreamManager) => {
    const log = captureLogger();
    const projector = createProjector({
      layout: SINGLE_PARTITION_LAYOUT,
      nc: conn.nc,
      js: conn.js,
      jsm,
      kv: conn.jobs,
      logger: log.logger,
      lease: createLease({
        kv: leases,
        key: "projector",
        holder: name,
        logger: log.logger,
      }),
    });
    return { projector, logs: log.logs };
  };
  const submit = async (requestId: string) => {
    const res = await hub.run({ request_id: requestId, route: "demo.echo", input: "x" }, TOKEN);
    return ((await res.json()) as { job_id: string }).job_id;
  };
  const done = (id: string) => async () =>
    (await conn.jobs.get(jobViewKey({ client_id: "acme", job_id: id })))?.json<{ status: string }>()
      ?.status === "done";

  const flaky = failingConsumerAdds(conn.jsm, 1);
  const a = replica("a", flaky.jsm);
  await a.projector.start();
  expect(flaky.state.failed).toBe(1);
  expect(a.logs()).toContain("could not start the lease's work; releasing the lease");
  // Released, not left to expire: the key is gone, and a standby takes it on its first try.
  expect((await leases.get("projector"))?.operation ?? "DEL").not.toBe("PUT");
  const b = replica("b", conn.jsm);
  await b.projector.start();
  expect(b.logs()).toContain("projector started");
  const first = await submit("lead-1");
  await waitFor("b to fold the first job", done(first));

  // b stops; a, its sit-out over, takes the lease and folds.
  await b.projector.stop();
  await waitFor("a to lead again", () => a.logs().includes("projector started"), {
    timeoutMs: SIT_OUT_AFTER_FAILED_LEAD_MS + 3_000,
  });
  const second = await submit("lead-2");
  await waitFor("a to fold the second job", done(second));
  await a.projector.stop();
});
