import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AddressInfo, createServer } from "node:net";
import { postTask } from "../../services/executor/kinds/http/post.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import type { Task } from "../../shared/worker/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { eventTypes, jobEvents, waitFinal } from "./helpers.ts";

// An executor's answer is read under the attempt's deadline and up to a cap: a body that stalls
// after its headers is a timeout counted against max_attempts, an answer above the cap ends the
// job with executor_response_too_large, and reading stops at the cap.

const SECRET = generateWebhookSecret();
const CHUNK = new Uint8Array(64 * 1024).fill(0x20);

/** Bytes a streaming answer produced so far, per path: shows where the reader stopped. */
const produced = new Map<string, number>();

function streamed(path: string, total: number, head = ""): Response {
  produced.set(path, 0);
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === 0 && head) controller.enqueue(new TextEncoder().encode(head));
      if (sent >= total) return controller.close();
      controller.enqueue(CHUNK);
      sent += CHUNK.byteLength;
      produced.set(path, sent);
    },
  });
  return new Response(stream, { headers: { "content-type": "application/json" } });
}

/** Headers now, then a body that never comes. */
function stalled(): Response {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"output":'));
    },
    pull: () => new Promise(() => {}),
  });
  return new Response(stream, { headers: { "content-type": "application/json" } });
}

let server: ReturnType<typeof Bun.serve>;
let base = "";

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      await req.text();
      const path = new URL(req.url).pathname;
      if (path === "/stall") return stalled();
      if (path === "/huge") return streamed(path, 50 * 1024 * 1024, '{"output":"');
      if (path === "/deep") return new Response(`${"[".repeat(10_000)}${"]".repeat(10_000)}`);
      if (path === "/four") return Response.json({ output: "f".repeat(4096) });
      return Response.json({ output: "fine" });
    },
  });
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server?.stop(true));

const TASK = {
  job_id: "job_AAAAAAAAAAAAAAAAAAAAAA",
  client_id: "acme",
  route: "x.answers",
  input: "hi",
} as unknown as Task;

const post = (path: string, extra: { timeoutMs?: number; maxResponseBytes?: number } = {}) =>
  postTask({
    url: `${base}${path}`,
    secret: SECRET,
    task: TASK,
    attempt: 1,
    timeoutMs: extra.timeoutMs ?? 2_000,
    clock: systemClock,
    signal: new AbortController().signal,
    ...(extra.maxResponseBytes === undefined ? {} : { maxResponseBytes: extra.maxResponseBytes }),
  });

describe("postTask reads the answer under the deadline and up to the cap", () => {
  test("headers, then a stalled body: a timeout, at the deadline", async () => {
    const started = Date.now();
    expect(await post("/stall", { timeoutMs: 500 })).toEqual({ kind: "retry", reason: "timeout" });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test("a 50 MB answer stops at the cap: too_large, and the rest is never read", async () => {
    expect(await post("/huge", { maxResponseBytes: 65_536 })).toEqual({
      kind: "too_large",
      limitBytes: 65_536,
    });
    await Bun.sleep(200);
    expect(produced.get("/huge")).toBeLessThan(8 * 1024 * 1024);
  });

  test("a declared Content-Length above the cap is refused before reading", async () => {
    // Bun.serve sets Content-Length itself; a raw socket can declare a gigabyte and send 2 bytes.
    const raw = createServer((socket) => {
      socket.once("data", () => {
        socket.write(
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{}",
        );
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = raw.address() as AddressInfo;
      const outcome = await postTask({
        url: `http://127.0.0.1:${port}/task`,
        secret: SECRET,
        task: TASK,
        attempt: 1,
        timeoutMs: 5_000,
        clock: systemClock,
        signal: new AbortController().signal,
      });
      expect(outcome).toEqual({ kind: "too_large", limitBytes: 262_144 });
    } finally {
      raw.close();
    }
  });

  test("an answer nested 10,000 deep is a bad response, not a stack overflow later", async () => {
    const outcome = await post("/deep");
    expect(outcome.kind).toBe("bad_response");
  });

  test("an ordinary answer is still done", async () => {
    expect(await post("/ok")).toEqual({ kind: "done", output: "fine" });
  });
});

describe("through the hub: counted attempts and a clear error code", () => {
  let hub: TestHub;
  const route = (key: string, path: string, extra: string) => `
  - key: ${key}
    executor:
      kind: http
      url: ${base}${path}
      secret: "${SECRET}"
      timeout: 400ms
      retry_backoff: [50ms]
      ${extra}`;
  const CLIENT = { id: "ops", token: "ops-token-0123456789abcdef", routes: ["x.*"] };

  beforeAll(async () => {
    hub = await startHub({
      clients: [CLIENT],
      services: ["ingress", "projector", "executor"],
      yaml: `routes:${route("x.stall", "/stall", "max_attempts: 3")}${route("x.huge", "/huge", "max_attempts: 3")}${route("x.four", "/four", "max_attempts: 1")}${route("x.capped", "/four", "max_response_bytes: 2048")}`,
    });
  });
  afterAll(() => hub?.stop());

  const get = (path: string) => hub.request(path, { token: CLIENT.token });
  const run = async (key: string) => {
    const res = await hub.run({ request_id: `${key}-1`, route: key, input: "x" }, CLIENT.token);
    return ((await res.json()) as { job_id: string }).job_id;
  };

  test("a stalled body is an attempt: three of them, then executor_unavailable", async () => {
    const jobId = await run("x.stall");
    const final = await waitFinal(get, jobId, 20_000);
    expect(final.status).toBe("error");
    expect((final.error as { code: string }).code).toBe("executor_unavailable");
    const events = await jobEvents(hub.nats.nc, CLIENT.id, jobId);
    // The lean event path records each failed attempt; the final error says how many there were.
    expect(events.map((e) => e.type)).toEqual([
      "job.attempt_failed",
      "job.attempt_failed",
      "job.error",
    ]);
    const data = events.map(
      (e) => e.data as { attempt?: number; reason?: string; message?: string },
    );
    expect(data.slice(0, 2).map((d) => [d.attempt, d.reason])).toEqual([
      [1, "timeout"],
      [2, "timeout"],
    ]);
    expect(data[2]?.message).toContain("3 attempts (last: timeout)");
  });

  test("an answer above the default cap ends the job with executor_response_too_large", async () => {
    const jobId = await run("x.huge");
    const final = await waitFinal(get, jobId, 20_000);
    expect(final.status).toBe("error");
    expect((final.error as { code: string }).code).toBe("executor_response_too_large");
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual(["job.error"]);
  });

  test("the cap is per route: 4 KiB passes the default and is too large for a 2 KiB route", async () => {
    const small = await waitFinal(get, await run("x.four"), 20_000);
    expect(small.status).toBe("done");
    const capped = await waitFinal(get, await run("x.capped"), 20_000);
    expect((capped.error as { code: string }).code).toBe("executor_response_too_large");
    expect((capped.error as { message: string }).message).toContain("2048");
  });
});
