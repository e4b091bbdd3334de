// Runs the PACKED SDK (imported by its package name, as a user would) on Node, Bun or Deno
// against a real hub. Started by tests/sdk/package.test.ts with the hub's addresses in the
// environment; prints one "ok"/"not ok" line per check, "1..N" and exits non-zero on a failure.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import {
  ConflictError,
  createSwitchyardClient,
  InvalidRequestError,
  listJobsPath,
  NotFoundError,
  newRequestId,
  PermissionDeniedError,
  SwitchyardApiError,
  SwitchyardNetworkError,
  verifyCallback,
  WebhookVerificationError,
} from "@switchyard/sdk";

const env = (name) => {
  const value = globalThis.process?.env?.[name] ?? globalThis.Deno?.env.get(name);
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const baseUrl = env("SY_BASE_URL");
const proxyUrl = env("SY_PROXY_URL");
const token = env("SY_TOKEN");
const otherToken = env("SY_OTHER_TOKEN");
const secrets = JSON.parse(env("SY_SECRETS"));
const runtime = globalThis.Deno ? "deno" : globalThis.Bun ? "bun" : "node";

const client = createSwitchyardClient({ baseUrl, token, retry: { baseDelayMs: 10 } });
const request = (extra = {}) => ({
  request_id: `${runtime}-${newRequestId()}`,
  route: "demo.echo",
  input: `hello from ${runtime}`,
  ...extra,
});

function randomSecret() {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

function concat(chunks) {
  const body = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.length;
  }
  return body;
}

/** One callback receiver on 127.0.0.1 (node:http exists on all three runtimes). */
function receiveOneCallback() {
  return new Promise((resolveServer) => {
    let deliver;
    const delivered = new Promise((resolve) => {
      deliver = resolve;
    });
    const server = createServer((req, res) => {
      const chunks = [];
      req.on("data", (chunk) => chunks.push(chunk));
      req.on("end", () => {
        res.statusCode = 204;
        res.end();
        deliver({ body: concat(chunks), headers: req.headers });
      });
    });
    server.listen(0, "127.0.0.1", () => {
      const url = `http://127.0.0.1:${server.address().port}/hook`;
      resolveServer({ url, delivered, close: () => server.close() });
    });
  });
}

/** Polls `probe` until it returns a truthy value; the search index follows the jobs within moments. */
async function eventually(what, probe, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

const checks = [
  [
    "run creates a job; the same request again returns it",
    async () => {
      const req = request();
      const first = await client.run(req);
      assert.equal(first.created, true);
      assert.equal(first.location, `/jobs/${first.job.job_id}`);
      const again = await client.run(req);
      assert.equal(again.created, false);
      assert.equal(again.job.job_id, first.job.job_id);
    },
  ],
  [
    "getJob and waitForJob return the final record",
    async () => {
      const { job } = await client.run(request());
      assert.equal((await client.getJob(job.job_id)).job_id, job.job_id);
      const done = await client.waitForJob(job.job_id, {
        initialIntervalMs: 20,
        timeoutMs: 10_000,
      });
      assert.equal(done.status, "done");
      assert.equal(done.output, `hello from ${runtime}`);
    },
  ],
  [
    "problems arrive as typed errors with the hub's codes",
    async () => {
      const invalid = await rejection(client.run({ ...request(), callback: "https://x.example" }));
      assert.ok(invalid instanceof InvalidRequestError && invalid instanceof SwitchyardApiError);
      assert.equal(invalid.code, "invalid_request");
      assert.ok(invalid.errors.some((e) => e.pointer === "/callback"));
      const denied = await rejection(client.run(request({ route: "billing.invoice" })));
      assert.ok(denied instanceof PermissionDeniedError);
      assert.equal(denied.code, "route_not_allowed");
      const { job } = await client.run(request());
      const other = createSwitchyardClient({ baseUrl, token: otherToken });
      const missing = await rejection(other.getJob(job.job_id));
      assert.ok(missing instanceof NotFoundError);
      assert.equal(missing.code, "job_not_found");
    },
  ],
  [
    "a lost answer is retried with the same request_id and finds the job",
    async () => {
      const req = request();
      const fault = { method: "POST", requestId: req.request_id, action: "hold" };
      await fetch(`${proxyUrl}/__proxy/faults`, { method: "POST", body: JSON.stringify(fault) });
      const proxied = createSwitchyardClient({
        baseUrl: proxyUrl,
        token,
        requestTimeoutMs: 500,
        retry: { baseDelayMs: 10 },
      });
      const result = await proxied.run(req);
      assert.equal(result.created, false);
      const seen = await (
        await fetch(`${proxyUrl}/__proxy/seen?request_id=${encodeURIComponent(req.request_id)}`)
      ).json();
      assert.equal(seen.length, 2);
      assert.equal(seen[0].body, seen[1].body);
    },
  ],
  [
    "no answer at all is a SwitchyardNetworkError naming the request_id",
    async () => {
      const dead = createSwitchyardClient({
        baseUrl: "http://127.0.0.1:9",
        token,
        retry: { maxAttempts: 2, baseDelayMs: 5 },
      });
      const req = request();
      const error = await rejection(dead.run(req));
      assert.ok(error instanceof SwitchyardNetworkError);
      assert.equal(error.attempts, 2);
      assert.equal(error.requestId, req.request_id);
    },
  ],
  [
    "a callback signed by the hub verifies with either rotated secret",
    async () => {
      const receiver = await receiveOneCallback();
      try {
        const { job } = await client.run(request({ callback_url: receiver.url }));
        const { body, headers } = await receiver.delivered;
        for (const accepted of [[secrets[0]], [secrets[1]], [randomSecret(), secrets[1]]]) {
          const event = verifyCallback(body, headers, accepted);
          assert.equal(event.type, "job.completed");
          assert.equal(event.data.job_id, job.job_id);
        }
        const error = (() => {
          try {
            verifyCallback(body, headers, [randomSecret()]);
          } catch (err) {
            return err;
          }
        })();
        assert.ok(error instanceof WebhookVerificationError);
        assert.equal(error.code, "no_matching_signature");
      } finally {
        receiver.close();
      }
    },
  ],
  [
    "listJobs and iterateJobs read this client's jobs, newest first, page by page",
    async () => {
      const mine = [];
      for (let i = 0; i < 3; i++) mine.push((await client.run(request())).job.job_id);
      const other = createSwitchyardClient({ baseUrl, token: otherToken });
      const theirs = (await other.run(request())).job.job_id;
      const listed = await eventually("the index to list the jobs", async () => {
        const jobs = [];
        for await (const job of client.iterateJobs({ route: "demo.echo", limit: 2 })) {
          jobs.push(job);
        }
        return mine.every((id) => jobs.some((j) => j.job_id === id)) ? jobs : undefined;
      });
      const ids = listed.map((j) => j.job_id);
      assert.equal(new Set(ids).size, ids.length);
      assert.ok(!ids.includes(theirs));
      const times = listed.map((j) => j.created_at);
      assert.deepEqual(times, [...times].sort().reverse());
      const first = await client.listJobs({ route: "demo.echo", limit: 1 });
      assert.equal(first.jobs.length, 1);
      assert.equal(typeof first.nextCursor, "string");
      const second = await client.listJobs({
        route: "demo.echo",
        limit: 1,
        cursor: first.nextCursor,
      });
      assert.equal(second.jobs.length, 1);
      assert.notEqual(second.jobs[0].job_id, first.jobs[0].job_id);
      const refused = await rejection(client.listJobs({ cursor: "not-a-cursor" }));
      assert.ok(refused instanceof InvalidRequestError);
    },
  ],
  [
    "cancelJob stops a waiting job once; a finished job is job_final; another client's is not found",
    async () => {
      const { job } = await client.run(request({ route: "demo.slow" }));
      const first = await client.cancelJob(job.job_id);
      assert.equal(first.state, "cancelling");
      assert.equal(first.job.status, "error");
      assert.equal(first.job.error?.code, "cancelled");
      assert.equal((await client.cancelJob(job.job_id)).state, "cancelled");
      assert.equal((await client.getJob(job.job_id)).error?.code, "cancelled");
      const other = createSwitchyardClient({ baseUrl, token: otherToken });
      const notYours = await rejection(other.cancelJob(job.job_id));
      assert.ok(notYours instanceof NotFoundError);
      assert.equal(notYours.code, "job_not_found");
      const done = await client.run(request());
      await client.waitForJob(done.job.job_id, { initialIntervalMs: 20, timeoutMs: 10_000 });
      const final = await rejection(client.cancelJob(done.job.job_id));
      assert.ok(final instanceof ConflictError);
      assert.equal(final.code, "job_final");
    },
  ],
  [
    "list requests are built as issue 16 specifies",
    () => {
      assert.equal(
        listJobsPath({ status: ["error", "rejected"], limit: 10 }),
        "/jobs?status=error&status=rejected&limit=10",
      );
    },
  ],
];

let failed = 0;
for (const [index, [name, check]] of checks.entries()) {
  try {
    await check();
    console.log(`ok ${index + 1} - ${runtime}: ${name}`);
  } catch (err) {
    failed += 1;
    console.log(`not ok ${index + 1} - ${runtime}: ${name}\n  ${String(err?.stack ?? err)}`);
  }
}
console.log(`1..${checks.length}`);
if (failed > 0) process.exitCode = 1;
