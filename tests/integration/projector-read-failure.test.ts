/**
 * A projector whose view reads fail for a while (a request timed out, NATS away) keeps the jobs
 * held and folds them once reads work again. The read of a round's first fold was not handled:
 * the rejection ended the process (Bun exits on an unhandled one). A leader paused past its
 * requests' timeouts (tests/faults/projector-fencing.test.ts) woke, failed those reads and died,
 * and no projector was left to take the lease.
 */
import { expect, test } from "bun:test";
import type { KV } from "@nats-io/kv";
import { createProjector } from "../../services/projector/index.ts";
import { jobViewKey, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "reads-token-0123456789abcdef";

/** The bucket, with its first `failures` reads failing as a timed-out request does. */
function failingReads(kv: KV, failures: number) {
  const state = { failed: 0 };
  const wrapped = new Proxy(kv, {
    get(target, property) {
      if (property === "get") {
        return async (key: string) => {
          if (state.failed < failures) {
            state.failed++;
            throw new Error("TIMEOUT");
          }
          return target.get(key);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: wrapped, state };
}

/** A callback receiver that holds every request until released. */
function gatedReceiver() {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch() {
      await gate;
      return new Response(null, { status: 204 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/cb`,
    release: open,
    stop: () => server.stop(true),
  };
}

test("view reads that fail for a while: the projector lives, retries, and every view completes", async () => {
  const receiver = gatedReceiver();
  try {
    // No projector service: the test runs two of its own, one after the other.
    await using hub = await startHub({
      services: ["ingress", "executor", "callback"],
      clients: [
        {
          id: "acme",
          token: TOKEN,
          routes: ["demo.*"],
          callbackSecrets: [generateWebhookSecret()],
        },
      ],
      yaml: 'callbacks: { allow_cidrs: ["127.0.0.1/32"], timeout: 10s }',
    });
    const { hub: conn } = hub.running;
    const projector = (kv: KV) =>
      createProjector({
        layout: SINGLE_PARTITION_LAYOUT,
        nc: conn.nc,
        js: conn.js,
        jsm: conn.jsm,
        kv,
        logger: captureLogger().logger,
      });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await hub.run(
        { request_id: `reads-${i}`, route: "demo.echo", input: "x", callback_url: receiver.url },
        TOKEN,
      );
      ids.push(((await res.json()) as { job_id: string }).job_id);
    }
    const views = async () =>
      Promise.all(
        ids.map(
          async (id) =>
            (await conn.jobs.get(jobViewKey({ client_id: "acme", job_id: id })))?.json<{
              status: string;
              callback?: { status: string };
            }>() ?? null,
        ),
      );
    // The first projector writes every job as done, its callback still held by the receiver.
    const first = projector(conn.jobs);
    await first.start();
    await waitFor("every job done", async () => (await views()).every((v) => v?.status === "done"));
    await first.stop();

    // The second one has never seen these views: callback.delivered needs a read, which fails.
    const flaky = failingReads(conn.jobs, 5);
    const second = projector(flaky.kv);
    await second.start();
    try {
      receiver.release();
      await waitFor(
        "every callback delivered in the views",
        async () => (await views()).every((v) => v?.callback?.status === "delivered"),
        { timeoutMs: 15_000 },
      );
      expect(flaky.state.failed).toBe(5);
    } finally {
      await second.stop();
    }
  } finally {
    receiver.stop();
  }
});
