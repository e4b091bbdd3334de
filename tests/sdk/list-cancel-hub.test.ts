/**
 * The SDK's listJobs/iterateJobs/cancelJob against the real hub (issue 16, section 1): the
 * hub's GET /jobs and POST /jobs/{job_id}/cancel as the SDK calls them (cancel with no body and
 * no Content-Type), and the errors it raises.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  ConflictError,
  createSwitchyardClient,
  InvalidRequestError,
  type Job,
  NotFoundError,
} from "../../sdk/src/index.ts";
import { waitFor } from "../helpers/wait.ts";
import { type SdkHub, startSdkHub } from "./hub.ts";

let sdk: SdkHub;
beforeAll(async () => {
  sdk = await startSdkHub();
});
afterAll(() => sdk.stop());

const client = (name: "acme" | "globex" = "acme") =>
  createSwitchyardClient({ baseUrl: sdk.baseUrl, token: sdk.clients[name].token });

describe("listJobs and iterateJobs", () => {
  test("this client's jobs, newest first, page after page, filtered", async () => {
    const acme = client();
    const created: string[] = [];
    for (let i = 0; i < 7; i++) {
      const { job } = await acme.run({
        request_id: `sdk-list-${i}`,
        route: "demo.echo",
        input: "x",
      });
      created.push(job.job_id);
    }
    const other = await client("globex").run({
      request_id: "sdk-list-g",
      route: "demo.echo",
      input: "x",
    });
    const all = await waitFor("the index to list them", async () => {
      const jobs: Job[] = [];
      for await (const job of acme.iterateJobs({ route: "demo.echo", limit: 3 })) jobs.push(job);
      return created.every((id) => jobs.some((j) => j.job_id === id)) ? jobs : undefined;
    });
    expect(new Set(all.map((j) => j.job_id)).size).toBe(all.length);
    expect(all.map((j) => j.job_id)).not.toContain(other.job.job_id);
    expect(all.map((j) => j.created_at)).toEqual(
      [...all.map((j) => j.created_at)].sort().reverse(),
    );
    const page = await acme.listJobs({ status: ["done"], route: "demo.echo", limit: 2 });
    expect(page.jobs).toHaveLength(2);
    expect(page.nextCursor).not.toBeNull();
    const next = await acme.listJobs({
      status: "done",
      route: "demo.echo",
      limit: 2,
      cursor: page.nextCursor ?? "",
    });
    expect(next.jobs.map((j) => j.job_id)).not.toContain(page.jobs[0]?.job_id);
  });

  test("a bad cursor is the hub's InvalidRequestError", async () => {
    const err = await client()
      .listJobs({ cursor: "not-a-cursor" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidRequestError);
  });
});

describe("cancelJob", () => {
  test("cancelling, then cancelled; a finished job is job_final; another client's is not found", async () => {
    const acme = client();
    const { job } = await acme.run({ request_id: "sdk-cancel", route: "demo.slow", input: "x" });
    const first = await acme.cancelJob(job.job_id);
    expect(first.state).toBe("cancelling");
    expect(first.job.status).toBe("error");
    expect(first.job.error?.code).toBe("cancelled");
    expect(first.job.error?.cancelled_by).toEqual({ kind: "client", id: "acme" });
    const second = await acme.cancelJob(job.job_id);
    expect(second.state).toBe("cancelled");
    const done = await acme.run({ request_id: "sdk-cancel-done", route: "demo.echo", input: "x" });
    const final = await acme.waitForJob(done.job.job_id, { timeoutMs: 10_000 });
    const refused = await acme.cancelJob(final.job_id).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConflictError);
    expect((refused as ConflictError).code).toBe("job_final");
    const notYours = await client("globex")
      .cancelJob(job.job_id)
      .catch((e: unknown) => e);
    expect(notYours).toBeInstanceOf(NotFoundError);
  });
});
