/**
 * The JetStream floor (bench/peer/floor-*.ts) is only a bound for the hub if it does the work it
 * claims: an idempotent run, a view GET can read, a verified signed callback retried until it is
 * delivered, and three stored events per job with none stored twice. The same holds for the split
 * floor (its executor, callback step and views fold as processes of their own) and the feed floor
 * (the split floor whose views fold every event of a job from one ack-all durable, as the hub's
 * read models do). Real nats-server, real HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { createFloorTopology, FLOOR_FEED, floorLayout } from "../../bench/peer/floor-common.ts";
import { generateWebhookSecret, verifyWebhook } from "../../shared/webhooks/index.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "floor-test-token";
const SECRET = generateWebhookSecret();
let receiver: ReturnType<typeof Bun.serve>;
/** Verified callbacks by job id; the first to /cb-flaky per job is refused with 503. */
const delivered = new Map<string, number>();
const refused = new Set<string>();

beforeAll(() => {
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = await request.text();
      const verified = verifyWebhook(body, request.headers, [SECRET]);
      const jobId = (JSON.parse(body) as { data: { job_id: string } }).data.job_id;
      if (new URL(request.url).pathname === "/cb-flaky" && !refused.has(jobId)) {
        refused.add(jobId);
        return new Response(null, { status: 503 });
      }
      expect(verified.id).toBe(`msg_${jobId}`);
      delivered.set(jobId, (delivered.get(jobId) ?? 0) + 1);
      return new Response(null, { status: 204 });
    },
  });
});

afterAll(() => receiver.stop(true));

async function spawnFloor(
  children: ReturnType<typeof Bun.spawn>[],
  script: string,
  env: Record<string, string>,
) {
  const ready = /READY|LISTENING (\d+)/;
  const child = Bun.spawn([process.execPath, script], {
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "inherit",
  });
  children.push(child);
  const reader = child.stdout.getReader();
  let out = "";
  while (!ready.test(out)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${script} exited before ${ready}: ${out}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return out;
}

/**
 * One floor: its own nats-server, its worker processes (FLOOR_ROLE each) and its server; with
 * `partitions` > 1 its streams and view buckets are one per partition (the partitions run).
 */
function describeFloor(name: string, roles: readonly string[], partitions = 1) {
  const layout = floorLayout(partitions);
  describe(name, () => {
    let nats: TestNats;
    let base = "";
    const children: ReturnType<typeof Bun.spawn>[] = [];
    const prefix = `${name.replaceAll(" ", "-")}-`;

    beforeAll(async () => {
      nats = await startNats();
      await createFloorTopology(nats.url, {
        runsInFlight: 64,
        viewsInFlight: 1024,
        split: roles.length > 1,
        feed: roles.includes("feed"),
        partitions,
      });
      const env = {
        NATS_URL: nats.url,
        PEER_TOKEN: TOKEN,
        WEBHOOK_SECRET: SECRET,
        PORT: "0",
        FLOOR_PARTITIONS: String(partitions),
      };
      for (const role of roles) {
        await spawnFloor(children, "bench/peer/floor-worker.ts", { ...env, FLOOR_ROLE: role });
      }
      const line = await spawnFloor(children, "bench/peer/floor-server.ts", env);
      base = `http://127.0.0.1:${/LISTENING (\d+)/.exec(line)?.[1]}`;
    });

    afterAll(async () => {
      for (const child of children) child.kill();
      await Promise.all(children.map((c) => c.exited));
      await nats.stop();
    });

    async function run(requestId: string, callbackPath: string, token = TOKEN) {
      const res = await fetch(`${base}/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          request_id: `${prefix}${requestId}`,
          route: "bench.echo",
          input: `input of ${requestId}`,
          callback_url: `http://127.0.0.1:${receiver.port}${callbackPath}`,
        }),
      });
      return { status: res.status, body: (await res.json()) as { job_id: string } };
    }

    const storedFor = async (jobId: string) => {
      const stream = layout.stream(layout.partitionOf(jobId));
      const info = await (await jetstreamManager(nats.nc)).streams.info(stream, {
        subjects_filter: layout.subject("run", jobId).replace(".run.", ".*."),
      });
      return info.state.subjects ?? {};
    };
    /** Its events once all three are stored: callback.delivered follows the callback's 2xx. */
    const settledEvents = (jobId: string) =>
      waitFor("the job's three events", async () => {
        const stored = await storedFor(jobId);
        return Object.keys(stored).length === 3 ? stored : undefined;
      });
    const storedInAll = async () => {
      const jsm = await jetstreamManager(nats.nc);
      let n = 0;
      for (let p = 0; p < partitions; p++)
        n += (await jsm.streams.info(layout.stream(p))).state.messages;
      return n;
    };

    test("a replayed request_id names the same job, whose run is stored once; GET serves its view", async () => {
      const first = await run("replayed", "/cb");
      const again = await run("replayed", "/cb");
      expect(first.status).toBe(202);
      expect(again.body.job_id).toBe(first.body.job_id);
      const jobId = first.body.job_id;
      await waitFor("the callback", () => delivered.has(jobId));
      const view = await waitFor("the view", async () => {
        const res = await fetch(`${base}/jobs/${jobId}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        return res.ok ? ((await res.json()) as { status: string; output: string }) : undefined;
      });
      expect(view).toMatchObject({ status: "done", output: "input of replayed" });
      expect(await settledEvents(jobId)).toEqual({
        [layout.subject("run", jobId)]: 1,
        [layout.subject("done", jobId)]: 1,
        [layout.subject("cb", jobId)]: 1,
      });
      expect(delivered.get(jobId)).toBe(1);
    });

    test("a refused callback is retried until delivered, and no event is stored twice", async () => {
      const { body } = await run("retried", "/cb-flaky");
      await waitFor("the retried callback", () => delivered.get(body.job_id) === 1, {
        timeoutMs: 15_000,
      });
      expect(refused.has(body.job_id)).toBe(true);
      expect(Object.values(await settledEvents(body.job_id))).toEqual([1, 1, 1]);
    });

    if (roles.includes("feed")) {
      /** GET until the view shows the callback delivered. */
      const deliveredView = (jobId: string) =>
        waitFor(
          "the view with the callback delivered",
          async () => {
            const res = await fetch(`${base}/jobs/${jobId}`, {
              headers: { authorization: `Bearer ${TOKEN}` },
            });
            const view = res.ok ? ((await res.json()) as { callback?: { status: string } }) : {};
            return view.callback?.status === "delivered" ? view : undefined;
          },
          { timeoutMs: 15_000 },
        );

      test("the feed's views show the callback's state, also one retried past the settle wait, and every event of the feed is acked", async () => {
        const first = await run("fed", "/cb");
        // Refused once, then delivered a second later: the view is written at the settle wait
        // (400 ms) with the callback pending, so the job cannot hold the feed's acks meanwhile.
        const retried = await run("fed-retried", "/cb-flaky");
        expect(await deliveredView(first.body.job_id)).toMatchObject({
          status: "done",
          output: "input of fed",
          callback: { status: "delivered", attempts: 1 },
        });
        expect(await deliveredView(retried.body.job_id)).toMatchObject({
          status: "done",
          callback: { status: "delivered", attempts: 2 },
        });
        const jsm = await jetstreamManager(nats.nc);
        for (const jobId of [first.body.job_id, retried.body.job_id]) {
          const stream = layout.stream(layout.partitionOf(jobId));
          const info = await waitFor("the feed acked", async () => {
            const i = await jsm.consumers.info(stream, FLOOR_FEED);
            return i.num_ack_pending === 0 && i.num_pending === 0 ? i : undefined;
          });
          expect(info.ack_floor.stream_seq).toBe(info.delivered.stream_seq);
        }
      });
    }

    test("a wrong token is refused with 401 and stores nothing", async () => {
      const before = await storedInAll();
      const res = await run("unauthorised", "/cb", "wrong");
      expect(res.status).toBe(401);
      expect(await storedInAll()).toBe(before);
    });
  });
}

describeFloor("the JetStream floor", ["worker"]);
describeFloor("the split floor", ["executor", "callback", "views"]);
describeFloor("the JetStream floor over 8 partitions", ["worker"], 8);
describeFloor("the split floor over 8 partitions", ["executor", "callback", "views"], 8);
describeFloor("the feed floor", ["executor", "callback", "feed"]);
describeFloor("the feed floor over 8 partitions", ["executor", "callback", "feed"], 8);
