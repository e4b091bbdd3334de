import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startNats } from "../helpers/nats.ts";
import { rawHttp } from "../helpers/raw-http.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, requestNumber, startCallbackReceiver, subjectEvents } from "./checks.ts";
import { FAULT_CLIENT, faultYaml, getJob, hubProcs, pool, rssBytes } from "./procs.ts";

// The neighbours of the hanging peers in slow-peers.test.ts, under load in one `switchyard up`:
// an executor and a callback receiver that answer at once and then stall their body, or send
// 50 MB; and callers that hang up mid-body. Every job ends with the documented code, the huge
// answers are not buffered (RSS bounded), disconnects are not errors, other work keeps flowing.

const CHUNK = new Uint8Array(64 * 1024).fill(0x20);

function stalledBody(): Response {
  return new Response(
    new ReadableStream<Uint8Array>({
      start: (c) => c.enqueue(new TextEncoder().encode('{"output":')),
      pull: () => new Promise(() => {}),
    }),
    { headers: { "content-type": "application/json" } },
  );
}

function hugeBody(bytes: number): Response {
  let sent = 0;
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= bytes) return c.close();
        c.enqueue(CHUNK);
        sent += CHUNK.byteLength;
      },
    }),
    { headers: { "content-type": "application/json" } },
  );
}

/** One server for both bad executors and bad receivers: the path says how it misbehaves. */
function startBadPeer() {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      await req.text();
      return new URL(req.url).pathname.endsWith("/stall") ? stalledBody() : hugeBody(50 * 2 ** 20);
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

test("stalled and huge answers from executors and receivers, callers hanging up: every job ends, memory bounded", async () => {
  await using nats = await startNats();
  await using receiver = startCallbackReceiver();
  const bad = startBadPeer();
  const secret = generateWebhookSecret();
  const route = (key: string, path: string) => `
  - key: ${key}
    deadline: 10m
    concurrency: 8
    executor:
      kind: http
      url: ${bad.url}${path}
      secret: "${secret}"
      timeout: 500ms
      max_attempts: 2
      retry_backoff: [100ms]
`;
  const yaml = faultYaml({
    natsUrl: nats.url,
    callbacks: { timeout: "1s", retry_schedule: ["200ms"] },
    routes: route("f.stall", "/exec/stall") + route("f.huge", "/exec/huge"),
  });
  await using procs = await hubProcs(yaml, nats.url);
  try {
    await procs.start("up");
    const pid = procs.pid("up") ?? 0;
    const kind = (n: number) => ({
      route: n % 40 === 0 ? "f.stall" : n % 40 === 20 ? "f.huge" : "f.echo",
      callback:
        n % 7 === 0
          ? `${bad.url}/cb/stall`
          : n % 7 === 1
            ? `${bad.url}/cb/huge`
            : n % 7 === 2
              ? `${receiver.url}/cb`
              : undefined,
    });
    const load = new Load(procs.url, (request_id, n) => {
      const k = kind(n);
      return {
        request_id,
        route: k.route,
        input: request_id,
        ...(k.callback ? { callback_url: k.callback } : {}),
      };
    });
    load.start(6, 40);
    // Callers that send half a body and hang up, beside the load.
    let hangups = 0;
    const port = () => Number(new URL(procs.url()).port);
    const hangingUp = (async () => {
      while (hangups < 40) {
        await rawHttp({
          port: port(),
          head: `POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${FAULT_CLIENT.token}\r\nContent-Type: application/json\r\nContent-Length: 4000`,
          body: [new TextEncoder().encode('{"request_id":"gone","route":"f.echo","input":"')],
          timeoutMs: 50,
        });
        hangups++;
      }
    })();
    await waitFor("warm-up", () => load.accepted.size >= 300, { timeoutMs: 20_000 });
    const rssStart = rssBytes(pid);
    let rssMax = rssStart;
    const deliveredAtStart = receiver.received.length;
    const until = Date.now() + 8_000;
    await waitFor(
      "8 s of load against the misbehaving peers",
      () => {
        rssMax = Math.max(rssMax, rssBytes(pid));
        return Date.now() > until;
      },
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    await load.stop();
    await hangingUp;
    expect(load.unexpected).toEqual([]);
    expect(load.unsettled.size).toBe(0);
    expect(receiver.received.length - deliveredAtStart).toBeGreaterThan(30);

    const entries = [...load.accepted.entries()];
    const want = {
      "f.echo": "done",
      "f.stall": "executor_unavailable",
      "f.huge": "executor_response_too_large",
    };
    await waitFor(
      "every job to end with its documented outcome",
      async () => {
        let open = 0;
        await pool(entries, 16, async ([rid, id]) => {
          const route = kind(requestNumber(rid)).route as keyof typeof want;
          const job = await getJob(procs.url(), id);
          const got =
            job.body.status === "done" ? "done" : (job.body.error as { code?: string })?.code;
          if (got !== want[route]) open++;
        });
        return open === 0;
      },
      { timeoutMs: 45_000, intervalMs: 500 },
    );
    const growth = rssMax - rssStart;
    process.stdout.write(
      `peer answers: ${load.accepted.size} runs, ${hangups} callers hung up, RSS ${Math.round(rssStart / 2 ** 20)} → max ${Math.round(rssMax / 2 ** 20)} MiB\n`,
    );
    expect(growth).toBeLessThan(100 * 2 ** 20);

    // Callbacks to the misbehaving receivers: failed attempts with the documented error class.
    const jsm = await jetstreamManager(nats.nc);
    for (const [path, errorClass] of [
      ["/cb/stall", "timeout"],
      ["/cb/huge", "response_too_large"],
    ] as const) {
      const sample = entries.filter(([rid]) => kind(requestNumber(rid)).callback?.endsWith(path));
      for (const [, id] of sample.slice(0, 5)) {
        const classes = await waitFor(`a failed attempt of ${id} to ${path}`, async () => {
          const events = await subjectEvents(jsm, id, "cb");
          const list = events.flatMap((e) =>
            e.type === "callback.attempted" ? [e.data.error_class] : [],
          );
          return list.length > 0 ? list : undefined;
        });
        expect(new Set(classes)).toEqual(new Set([errorClass]));
      }
    }
    const out = procs.output("up");
    expect(out).toContain("client disconnected before its request was complete");
    expect(out).not.toContain("unhandled error");
    expect(out).not.toContain('"level":50');
  } finally {
    await procs.stop();
    await bad.stop();
  }
}, 150_000);
