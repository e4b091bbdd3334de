/**
 * A job slower than the projector's linger (its callback, or its executor): its first view waits
 * for the job to settle (`projector.settle_wait`) and is written once, while GET reads the job
 * from the stream, current. A callback slower than the settle wait gets the view written at the
 * wait's end and again at its outcome. A watch of the view bucket counts the writes.
 */
import { expect, test } from "bun:test";
import { jobViewKey } from "../../shared/jobs/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { heldReceiver } from "../helpers/held-receiver.ts";
import { startHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "settle-token-0123456789abcdef";

interface StoredView {
  readonly status: string;
  readonly callback?: { readonly status: string };
}

test("a job slower than the linger: one view write, and GET reads the job from the stream meanwhile", async () => {
  const receiver = heldReceiver();
  try {
    await using hub = await startHub({
      clients: [
        {
          id: "acme",
          token: TOKEN,
          routes: ["demo.*"],
          callbackSecrets: [generateWebhookSecret()],
        },
      ],
      yaml: [
        'callbacks: { allow_cidrs: ["127.0.0.1/32"], timeout: 5s }',
        "projector: { linger: 50ms, settle_wait: 2s }",
      ].join("\n"),
    });
    const { hub: conn } = hub.running;
    // Every write of a view, by key, from a watch started before the first job.
    const written = new Map<string, [string, string | undefined][]>();
    const watch = await conn.jobs.watch({ include: "updates" });
    void (async () => {
      for await (const entry of watch) {
        const stored = entry.json<StoredView>();
        const list = written.get(entry.key) ?? [];
        list.push([stored.status, stored.callback?.status]);
        written.set(entry.key, list);
      }
    })();
    const writes = async (key: string) => written.get(key);
    const view = async (key: string) => (await conn.jobs.get(key))?.json<StoredView>() ?? null;
    const post = async (requestId: string, route = "demo.echo", callback = true) => {
      const res = await hub.run(
        {
          request_id: requestId,
          route,
          input: "x",
          ...(callback ? { callback_url: receiver.url } : {}),
        },
        TOKEN,
      );
      expect(res.status).toBe(202);
      const { job_id } = (await res.json()) as { job_id: string };
      return { id: job_id, key: jobViewKey({ client_id: "acme", job_id }) };
    };

    // Within the settle wait: no view, six lingers after the job finished; GET answers from the
    // stream with the job done and its callback pending. Then the callback's outcome: one write.
    const quick = await post("settle-quick");
    await waitFor("the callback request", async () => receiver.waiting() === 1);
    await Bun.sleep(300);
    expect(await conn.jobs.get(quick.key)).toBeNull();
    const res = await hub.request(`/jobs/${quick.id}`, { token: TOKEN });
    expect(res.status).toBe(200);
    const job = (await res.json()) as { status: string; callback?: { status: string } };
    expect(job.status).toBe("done");
    expect(job.callback?.status).toBe("pending");
    receiver.release();
    await waitFor(
      "the delivered callback in the view",
      async () => (await view(quick.key))?.callback?.status === "delivered",
    );
    await waitFor("the watch's copy", async () =>
      (await writes(quick.key))?.some(([, callback]) => callback === "delivered"),
    );
    expect(await writes(quick.key)).toEqual([["done", "delivered"]]);

    // An executor slower than the linger (demo.sleep: 200 ms), no callback: one write, done.
    const sleeper = await post("settle-sleep", "demo.sleep", false);
    await waitFor(
      "the sleeping job's view",
      async () => (await view(sleeper.key))?.status === "done",
    );
    await waitFor("the watch's copy", async () =>
      (await writes(sleeper.key))?.some(([status]) => status === "done"),
    );
    expect(await writes(sleeper.key)).toEqual([["done", undefined]]);

    // Past the settle wait: written then, and again with the callback's outcome.
    const slow = await post("settle-slow");
    await waitFor("the second callback request", async () => receiver.waiting() === 1);
    await waitFor(
      "the view written at the end of the settle wait",
      async () => (await view(slow.key))?.callback?.status === "pending",
      { timeoutMs: 10_000 },
    );
    receiver.release();
    await waitFor(
      "the delivered callback in the view",
      async () => (await view(slow.key))?.callback?.status === "delivered",
    );
    await waitFor("the watch's copies", async () =>
      (await writes(slow.key))?.some(([, callback]) => callback === "delivered"),
    );
    expect(await writes(slow.key)).toEqual([
      ["done", "pending"],
      ["done", "delivered"],
    ]);
    // Nothing else was written for either job.
    await Bun.sleep(200);
    expect([...written.keys()].sort()).toEqual([quick.key, sleeper.key, slow.key].sort());
    expect(written.get(quick.key)).toHaveLength(1);
    expect(written.get(sleeper.key)).toHaveLength(1);
    watch.stop();
  } finally {
    receiver.release();
    receiver.stop();
  }
});
