import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, requestNumber, startCallbackReceiver, subjectEvents } from "./checks.ts";
import { faultYaml, getJob, hubProcs, pool, rssBytes } from "./procs.ts";

// A callback receiver that never answers and an HTTP executor whose server hangs, with short
// timeouts, under a steady load of other work in one hub process (`switchyard up`). The timeouts
// hold, the other jobs and callbacks keep flowing, and the process's RSS stays bounded.

const CB_TIMEOUT_MS = 1_000;
const EXEC_TIMEOUT_MS = 500;

test("hanging callback receiver and hanging executor: timeouts hold, other work flows, memory bounded", async () => {
  await using nats = await startNats();
  await using receiver = startCallbackReceiver();
  // An executor that accepts the connection and never answers.
  let held = 0;
  const hang = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      await req.text();
      held++;
      await new Promise<void>(() => {});
      return new Response(null);
    },
  });
  const yaml = faultYaml({
    natsUrl: nats.url,
    callbacks: { timeout: `${CB_TIMEOUT_MS}ms` },
    routes: `
  - key: f.hang
    deadline: 10m
    concurrency: 8
    executor:
      kind: http
      url: http://127.0.0.1:${hang.port}/task
      secret: "${generateWebhookSecret()}"
      timeout: ${EXEC_TIMEOUT_MS}ms
      max_attempts: 2
      retry_backoff: [100ms]
`,
  });
  await using procs = await hubProcs(yaml, nats.url);
  try {
    await procs.start("up");
    const pid = procs.pid("up") ?? 0;
    // Every 50th run goes to the hanging executor (its route runs 8 at a time, ~1.1 s each), every 3rd asks for a callback: one in ten of
    // those to the hanging receiver, the rest to the answering one. (More hanging receivers than
    // callbacks.concurrency can hold for a timeout each starve every other callback; see the
    // report of issue 7.)
    const kind = (n: number) => ({
      hang: n % 50 === 0,
      callback: n % 3 === 0 ? (n % 30 === 0 ? "/hang" : "/cb") : undefined,
    });
    const load = new Load(procs.url, (request_id, n) => {
      const k = kind(n);
      return {
        request_id,
        route: k.hang ? "f.hang" : "f.echo",
        input: request_id,
        ...(k.callback ? { callback_url: `${receiver.url}${k.callback}` } : {}),
      };
    });
    // Paced (8 × 25/s = 200 runs/s), so the memory bound does not depend on how fast this
    // machine happens to be.
    load.start(8, 40);
    await waitFor("warm-up", () => load.accepted.size >= 600, { timeoutMs: 20_000 });
    const rssStart = rssBytes(pid);
    let rssMax = rssStart;
    const deliveredAtStart = receiver.received.length;
    const until = Date.now() + 8_000;
    await waitFor(
      "8 s of load against the hanging peers",
      () => {
        rssMax = Math.max(rssMax, rssBytes(pid));
        return Date.now() > until;
      },
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    await load.stop();
    expect(load.unexpected).toEqual([]);
    expect(load.unsettled.size).toBe(0);
    // Other callbacks kept arriving while hanging ones were held open.
    expect(receiver.received.length - deliveredAtStart).toBeGreaterThan(50);
    expect(receiver.hanging).toBeGreaterThan(0);
    expect(held).toBeGreaterThan(0);
    const growth = rssMax - rssStart;
    process.stdout.write(
      `slow peers: ${load.accepted.size} runs, RSS ${Math.round(rssStart / 2 ** 20)} → max ${Math.round(rssMax / 2 ** 20)} MiB, executor POSTs held ${held}, callbacks held ${receiver.hanging}\n`,
    );
    expect(growth).toBeLessThan(100 * 2 ** 20);

    // Every job ends: echo jobs done, hanging-executor jobs error after max_attempts timeouts.
    const entries = [...load.accepted.entries()];
    await waitFor(
      "every job to end",
      async () => {
        let open = 0;
        await pool(entries, 16, async ([rid, id]) => {
          const job = await getJob(procs.url(), id);
          const want = kind(requestNumber(rid)).hang ? "error" : "done";
          if (job.body.status !== want) open++;
          else if (want === "error") {
            expect(job.body.error).toMatchObject({ code: "executor_unavailable" });
          }
        });
        return open === 0;
      },
      { timeoutMs: 45_000, intervalMs: 500 },
    );

    // The hanging receiver's callbacks: attempts that time out near the configured timeout.
    const jsm = await jetstreamManager(nats.nc);
    const hangingCb = entries.filter(([rid]) => kind(requestNumber(rid)).callback === "/hang");
    const sample = hangingCb.slice(0, 10).map(([, id]) => id);
    for (const id of sample) {
      const attempts = await waitFor(`a timed-out callback attempt for ${id}`, async () => {
        const events = await subjectEvents(jsm, id, "cb");
        const list = events.flatMap((e) => (e.type === "callback.attempted" ? [e.data] : []));
        return list.length > 0 ? list : undefined;
      });
      for (const a of attempts) {
        expect(a.error_class).toBe("timeout");
        expect(a.duration_ms).toBeGreaterThanOrEqual(CB_TIMEOUT_MS * 0.9);
        expect(a.duration_ms).toBeLessThan(CB_TIMEOUT_MS + 1_500);
      }
    }
  } finally {
    await procs.stop();
    await hang.stop(true);
  }
}, 120_000);
