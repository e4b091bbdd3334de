/**
 * The feed floor's views fold (bench/peer/floor-feed.ts) is the hub's JetStream work only if it
 * holds each view until its job settles, writes it once, and acks its feed all at once up to the
 * last event whose job is stored; and, as the hub's projector, writes a job still unsettled at the
 * settle wait, so a callback retried later cannot hold the feed's acks. Pure: deliveries are
 * stand-ins, the clock and the KV put are the test's.
 */
import { describe, expect, test } from "bun:test";
import type { JsMsg } from "@nats-io/jetstream";
import { CALLBACK_HEADER, createFeedViews, SETTLE_WAIT_MS } from "../../bench/peer/floor-feed.ts";
import { waitFor } from "../helpers/wait.ts";

interface Delivery {
  readonly msg: JsMsg;
  readonly acked: () => boolean;
}

function delivery(kind: "run" | "done" | "cb", jobId: string, body: object, callback?: string) {
  let acked = false;
  const msg = {
    subject: `floor.${kind}.${jobId}`,
    headers: { get: (name: string) => (name === CALLBACK_HEADER ? (callback ?? "") : "") },
    json: () => structuredClone(body),
    ack: () => {
      acked = true;
    },
  } as unknown as JsMsg;
  return { msg, acked: () => acked } satisfies Delivery;
}

const run = (jobId: string) =>
  delivery("run", jobId, {
    job_id: jobId,
    request_id: `r-${jobId}`,
    route: "bench.echo",
    input: "hello",
    created_at: "2026-11-29T00:00:00.000Z",
  });
const done = (jobId: string, callback?: string) =>
  delivery(
    "done",
    jobId,
    {
      job_id: jobId,
      request_id: `r-${jobId}`,
      route: "bench.echo",
      status: "done",
      created_at: "2026-11-29T00:00:00.000Z",
      output: "hello",
    },
    callback,
  );
const delivered = (jobId: string, attempt: number) =>
  delivery("cb", jobId, { job_id: jobId, attempt, duration_ms: 1 });

/** A fold with a hand-moved clock and KV puts the test settles. */
function harness() {
  let clock = 0;
  const puts: { jobId: string; view: Record<string, unknown>; store: () => void }[] = [];
  const views = createFeedViews({
    jobIdOf: (subject) => subject.slice(subject.lastIndexOf(".") + 1),
    now: () => clock,
    put: (jobId, view) =>
      new Promise((resolve) => {
        puts.push({ jobId, view: JSON.parse(view), store: () => resolve(undefined) });
      }),
  });
  return {
    views,
    puts,
    advance: (ms: number) => {
      clock += ms;
    },
    /** Stores every put so far (the KV answered), then lets the fold see it. */
    storeAll: async () => {
      for (const p of puts) p.store();
      await Promise.resolve();
    },
  };
}

describe("the feed floor's views fold", () => {
  test("a job without a callback is written once at its job.done, and its events are acked", async () => {
    const h = harness();
    const events = [run("a"), done("a")];
    for (const e of events) h.views.take(e.msg);
    expect(h.puts.map((p) => [p.jobId, p.view.status])).toEqual([["a", "done"]]);
    expect(events.some((e) => e.acked())).toBe(false);
    await h.storeAll();
    await waitFor("the batch's ack", () => events[1]?.acked());
  });

  test("a job with a callback waits for callback.delivered, then is written once", async () => {
    const h = harness();
    const events = [run("b"), done("b", "http://127.0.0.1:1/cb"), delivered("b", 1)];
    h.views.take(events[0]?.msg as JsMsg);
    h.views.take(events[1]?.msg as JsMsg);
    expect(h.puts).toHaveLength(0);
    h.views.take(events[2]?.msg as JsMsg);
    expect(h.puts.map((p) => p.view)).toEqual([
      expect.objectContaining({ status: "done", callback: { status: "delivered", attempts: 1 } }),
    ]);
    await h.storeAll();
    await waitFor("the ack of the last event", () => events[2]?.acked());
  });

  test("a job still unsettled at the settle wait is written as it is, and again when it settles", async () => {
    const h = harness();
    const slow = [run("c"), done("c", "http://127.0.0.1:1/cb")];
    for (const e of slow) h.views.take(e.msg);
    h.advance(SETTLE_WAIT_MS - 1);
    h.views.sweep();
    expect(h.puts).toHaveLength(0);
    h.advance(1);
    h.views.sweep();
    expect(h.puts.map((p) => p.view.callback)).toEqual([{ status: "pending", attempts: 0 }]);
    await h.storeAll();
    // Written, so its events no longer hold the feed's acks.
    await waitFor("the ack of the held job's events", () => slow[1]?.acked());
    const late = delivered("c", 2);
    h.views.take(late.msg);
    expect(h.puts[1]?.view).toEqual(
      expect.objectContaining({ status: "done", callback: { status: "delivered", attempts: 2 } }),
    );
    await h.storeAll();
    await waitFor("the ack of the late callback", () => late.acked());
  });

  test("an event is acked only when every job before it in the feed is stored", async () => {
    const h = harness();
    const first = [run("d"), done("d", "http://127.0.0.1:1/cb")];
    const second = [run("e"), done("e")];
    for (const e of [...first, ...second]) h.views.take(e.msg);
    await h.storeAll();
    await Bun.sleep(30);
    // e is stored, but d (before it) is held: acking e's events would ack d's unwritten ones.
    expect(second[1]?.acked()).toBe(false);
    h.advance(SETTLE_WAIT_MS);
    h.views.sweep();
    await h.storeAll();
    await waitFor("the ack past both jobs", () => second[1]?.acked());
  });
});
