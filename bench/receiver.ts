/**
 * Callback receiver for the end-to-end scenario: verifies every Standard Webhooks signature with
 * shared/webhooks verifyWebhook, records when each job's first callback arrived (wall clock, ms),
 * and answers 204. Used for the hub and the peer alike.
 *
 *   POST /cb          a callback (any path except the control ones below)
 *   POST /cb-flaky    a callback, refused with 503 the first time per job (a callback retry)
 *   POST /exec        an HTTP executor: answers 200 {"output": "ok"}
 *   POST /exec-flaky  an HTTP executor that answers 503 to the first attempt per job (an
 *                     executor retry; jobs are told apart by webhook-id, the job id)
 *   GET  /stats       {"ok","bad","duplicates","times":{job_id: ms}}
 *   GET  /count       {"ok","bad","duplicates","unique","last"}
 *   POST /reset       forget everything
 *
 * Env: PORT, WEBHOOK_SECRET (whsec_…). Prints "LISTENING <port>". Stops on SIGTERM/SIGINT.
 */
import { verifyWebhook } from "../shared/webhooks/index.ts";
import { nowMs } from "./lib/common.ts";

const secret = process.env.WEBHOOK_SECRET ?? "";
let times = new Map<string, number>();
let ok = 0;
let bad = 0;
let duplicates = 0;
let lastError = "";
let lastAt = 0;
/** Jobs already refused once by /cb-flaky or /exec-flaky. */
let refusedOnce = new Set<string>();
let refused = 0;

/** True the first time a job is seen here: the caller answers 503 then. */
function firstAttempt(key: string): boolean {
  if (refusedOnce.has(key)) return false;
  refusedOnce.add(key);
  refused++;
  return true;
}

interface CallbackBody {
  readonly data?: { readonly job_id?: string };
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.PORT ?? 0),
  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (request.method === "GET" && path === "/stats") {
      return Response.json({
        ok,
        bad,
        duplicates,
        refused,
        lastError,
        times: Object.fromEntries(times),
      });
    }
    if (request.method === "GET" && path === "/count") {
      return Response.json({ ok, bad, duplicates, unique: times.size, last: lastAt });
    }
    if (request.method === "POST" && path === "/reset") {
      times = new Map();
      refusedOnce = new Set();
      ok = bad = duplicates = lastAt = refused = 0;
      return new Response(null, { status: 204 });
    }
    if (request.method === "POST" && path.startsWith("/exec")) {
      await request.arrayBuffer();
      const jobId = request.headers.get("webhook-id") ?? "";
      if (path === "/exec-flaky" && firstAttempt(`exec ${jobId}`)) {
        return new Response("try again", { status: 503 });
      }
      return Response.json({ output: "ok" });
    }
    const at = nowMs();
    const raw = await request.text();
    try {
      verifyWebhook(raw, request.headers, [secret]);
    } catch (err) {
      bad++;
      lastError = (err as Error).message;
      return new Response("bad signature", { status: 401 });
    }
    const jobId = (JSON.parse(raw) as CallbackBody).data?.job_id ?? "";
    if (path === "/cb-flaky" && firstAttempt(`cb ${jobId}`)) {
      return new Response("try again", { status: 503 });
    }
    if (times.has(jobId)) duplicates++;
    else {
      times.set(jobId, at);
      lastAt = at;
    }
    ok++;
    return new Response(null, { status: 204 });
  },
});
process.stdout.write(`LISTENING ${server.port}\n`);
const stop = () => {
  void server.stop(true);
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
