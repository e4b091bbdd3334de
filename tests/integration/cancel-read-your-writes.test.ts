import { expect, test } from "bun:test";
import { CLIENT_TOKENS, OPERATOR_TOKENS, startOperatorHub } from "../admin/operator-hub.ts";
import { DEFAULT_CLIENTS, startHub } from "../helpers/hub.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

// Read-your-writes for a client's own cancel (docs/api.md, "How current it is"): after a 202 from
// POST /jobs/{job_id}/cancel, a GET through the same ingress never serves the view from before
// the cancel, however far behind the projector is. Here the projector is stopped outright after
// it wrote the job's dispatched view, so that view stays in KV: GET must fold the stream instead.

const ROUTES = `
routes:
  - key: demo.slow
    executor: { kind: nats }
`;
const ACME = DEFAULT_CLIENTS[0]?.token ?? "";

interface Job {
  readonly job_id: string;
  readonly status: string;
  readonly error?: { readonly code: string };
}

test("given a stale view, when the client cancels, then its next GET shows the cancel", async () => {
  await using nats = await startNats();
  const projector = await startHub({ nats, services: ["projector"], yaml: ROUTES });
  await using hub = await startHub({ nats, services: ["ingress", "executor"], yaml: ROUTES });
  const get = async (jobId: string) =>
    (await (await hub.request(`/jobs/${jobId}`, { token: ACME })).json()) as Job;

  const res = await hub.run({ request_id: "ryw-1", route: "demo.slow", input: "x" }, ACME);
  expect(res.status).toBe(202);
  const { job_id } = (await res.json()) as Job;
  await waitFor("the projector to write the dispatched view", async () => {
    const entry = await hub.running.hub.jobs.get(`acme.${job_id}`);
    return entry?.operation === "PUT" && entry.json<Job>().status === "dispatched";
  });
  await projector.stop();

  const cancel = await hub.request(`/jobs/${job_id}/cancel`, { method: "POST", token: ACME });
  expect(cancel.status).toBe(202);
  // The view in KV still says dispatched (no projector runs); GET reads past it.
  const entry = await hub.running.hub.jobs.get(`acme.${job_id}`);
  expect(entry?.json<Job>().status).toBe("dispatched");
  for (let i = 0; i < 3; i++) {
    const seen = await get(job_id);
    expect(seen.status).toBe("error");
    expect(seen.error?.code).toBe("cancelled");
  }
});

test("given a stale view, when an operator cancels through this ingress, then the client's next GET shows the cancel", async () => {
  await using nats = await startNats();
  const projector = await startOperatorHub({ nats, services: ["projector"] });
  const ops = await startOperatorHub({ nats, services: ["ingress", "indexer", "executor"] });
  try {
    const token = CLIENT_TOKENS.acme;
    const get = async (jobId: string) =>
      (await (await ops.hub.request(`/jobs/${jobId}`, { token })).json()) as Job;
    const res = await ops.hub.run({ request_id: "ryw-op", route: "demo.slow", input: "x" }, token);
    expect(res.status).toBe(202);
    const { job_id } = (await res.json()) as Job;
    await waitFor("the dispatched view, and the job in the index", async () => {
      const entry = await ops.hub.running.hub.jobs.get(`acme.${job_id}`);
      const listed = (await (await ops.hub.request("/jobs", { token })).json()) as {
        jobs: Job[];
      };
      return (
        entry?.operation === "PUT" &&
        entry.json<Job>().status === "dispatched" &&
        listed.jobs.some((j) => j.job_id === job_id)
      );
    });
    await projector.stop();

    const cancel = await ops.admin(`/jobs/${job_id}/cancel`, OPERATOR_TOKENS.alice, {
      method: "POST",
    });
    expect(cancel.status).toBe(202);
    expect((await ops.hub.running.hub.jobs.get(`acme.${job_id}`))?.json<Job>().status).toBe(
      "dispatched",
    );
    const seen = await get(job_id);
    expect(seen.status).toBe("error");
    expect(seen.error?.code).toBe("cancelled");
  } finally {
    await ops.stop();
    await projector.stop();
  }
});
