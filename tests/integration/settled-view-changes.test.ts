import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  CLIENT_TOKENS,
  OPERATOR_TOKENS,
  type OperatorHub,
  startOperatorHub,
} from "../admin/operator-hub.ts";
import { waitFor } from "../helpers/wait.ts";

// Two ingress replicas on one nats-server. A settled job view (final, no callback pending) is
// cached by each replica that read it; an event that changes it afterwards (an operator's retry,
// a callback redelivery request) must reach the readers of every replica once the projector has
// written it, not after the cache's 30 s backstop (view-cache.ts, view-notices.ts).

/** Well under the cache's 30 s backstop, well over the projector's write of a final view. */
const PROMPTLY = { timeoutMs: 3_000, intervalMs: 25 };

let a: OperatorHub;
let b: OperatorHub;
let receiver: ReturnType<typeof Bun.serve>;

interface Job {
  readonly job_id: string;
  readonly status: string;
  readonly retried_as?: string;
  readonly callback?: { readonly status: string; readonly attempts: number };
}

beforeAll(async () => {
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(null, { status: 410 }),
  });
  a = await startOperatorHub();
  b = await startOperatorHub({ nats: a.hub.nats, services: ["ingress"] });
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
  await receiver?.stop(true);
});

const token = CLIENT_TOKENS.acme;

async function getOn(hub: OperatorHub, jobId: string): Promise<Job> {
  const res = await hub.hub.request(`/jobs/${jobId}`, { token });
  expect(res.status).toBe(200);
  return (await res.json()) as Job;
}

async function submit(body: Record<string, unknown>): Promise<string> {
  const res = await a.hub.run({ input: "x", ...body }, token);
  expect(res.status).toBe(202);
  return ((await res.json()) as Job).job_id;
}

describe("a settled view that changes, read on another ingress replica", () => {
  test("given B read the finished job, when an operator retries it on A, then B's GET shows retried_as", async () => {
    const jobId = await submit({ request_id: "settled-retry", route: "demo.off" });
    await waitFor(
      "the rejected job on B",
      async () => (await getOn(b, jobId)).status === "rejected",
    );
    // Read again: B now answers from its cache of settled views.
    expect((await getOn(b, jobId)).retried_as).toBeUndefined();

    const retry = await a.admin(`/jobs/${jobId}/retry`, OPERATOR_TOKENS.alice, { method: "POST" });
    expect(retry.status).toBe(202);
    const { job } = (await retry.json()) as { job: Job };

    const seen = await waitFor(
      "retried_as on B",
      async () => (await getOn(b, jobId)).retried_as,
      PROMPTLY,
    );
    expect(seen).toBe(job.job_id);
    // And on A, whose cache held it too.
    expect((await getOn(a, jobId)).retried_as).toBe(job.job_id);
  });

  test("given B read the settled callback, when an operator redelivers it on A, then B's GET shows the new attempt", async () => {
    const jobId = await submit({
      request_id: "settled-redeliver",
      route: "demo.echo",
      callback_url: `http://127.0.0.1:${receiver.port}/gone`,
    });
    const before = await waitFor(
      "the failed callback on B",
      async () => {
        const view = await getOn(b, jobId);
        return view.callback?.status === "failed" ? view.callback : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect((await getOn(b, jobId)).callback).toEqual(before);

    const redeliver = await a.admin(`/callbacks/${jobId}/redeliver`, OPERATOR_TOKENS.alice, {
      method: "POST",
    });
    expect(redeliver.status).toBe(202);

    // Pending again, or already failed again with one more attempt: either way not the old view.
    await waitFor(
      "the redelivery on B",
      async () => {
        const callback = (await getOn(b, jobId)).callback;
        return callback?.status === "pending" || (callback?.attempts ?? 0) > before.attempts;
      },
      PROMPTLY,
    );
  });
});
