import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import {
  type CallbackService,
  callbackSettings,
  createCallbackService,
} from "../../services/callback/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { ConfigError, createRouteTable, parseConfig } from "../../shared/config/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { captureLogger } from "../helpers/logs.ts";
import { waitFor } from "../helpers/wait.ts";
import { type CallbackHub, callbackYaml, rid, startCallbackHub, TOKENS } from "./helpers.ts";

// callbacks.max_response_bytes, end to end: the key is read from the YAML, reaches the callback
// service, and bounds what an attempt reads of a receiver's answer. The cap here is twice the
// default (64 KiB), so a 100 KiB answer delivers only because the key was applied.

const CAP = 131_072;
const chunk = (bytes: number) => `${bytes.toString(16)}\r\n${"x".repeat(bytes)}\r\n`;

/** First answer per path; every later request to it gets a plain 204. */
const FIRST_ANSWER: Record<string, string> = {
  // Above the default, within the configured cap, complete.
  "/roomy": `HTTP/1.1 200 OK\r\nContent-Length: 102400\r\n\r\n${"x".repeat(102_400)}`,
  // One byte past the configured cap, then the body stalls (the attempt budget is 2 s): reading on
  // would end the attempt as a timeout, stopping at the cap ends it as response_too_large.
  "/one-past": `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(CAP)}${chunk(1)}`,
};

let hub: CallbackHub;
let callback: CallbackService;
let receiver: Server;
let receiverUrl = "";
const requests = new Map<string, number>();

/** Answers each complete request (head and Content-Length body) on a keep-alive connection. */
function answer(socket: Socket): void {
  let pending = Buffer.alloc(0);
  socket.on("error", () => {});
  socket.on("data", (data: Buffer) => {
    pending = Buffer.concat([pending, data]);
    for (;;) {
      const headEnd = pending.indexOf("\r\n\r\n");
      if (headEnd < 0) return;
      const head = pending.subarray(0, headEnd).toString("latin1");
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? "0");
      if (pending.length < headEnd + 4 + length) return;
      pending = pending.subarray(headEnd + 4 + length);
      const path = head.split(" ")[1] ?? "";
      const n = (requests.get(path) ?? 0) + 1;
      requests.set(path, n);
      const first = FIRST_ANSWER[path];
      socket.write(
        n === 1 && first !== undefined
          ? first
          : "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
      );
    }
  });
}

beforeAll(async () => {
  receiver = createServer(answer);
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  hub = await startCallbackHub({ inProcessCallback: false, schedule: ["100ms"] });
  const yaml = callbackYaml(hub.nats.url, ["100ms"]).replace(
    "callbacks:\n",
    `callbacks:\n  max_response_bytes: ${CAP}\n`,
  );
  const config = parseConfig(yaml, {}, "answer cap test config");
  const { logger } = captureLogger();
  callback = createCallbackService({
    layout: SINGLE_PARTITION_LAYOUT,
    js: hub.running.hub.js,
    jsm: hub.running.hub.jsm,
    nc: hub.running.hub.nc,
    settings: callbackSettings(config),
    client: createRouteTable(config).client,
    logger,
    clock: systemClock,
    ids: randomIds,
  });
  await callback.start();
});
// A hub stopped right after a request can wait out the ingress's grace period for that connection.
afterAll(async () => {
  await callback?.stop();
  await hub?.stop();
  receiver?.close();
}, 30_000);

/** Submits a run with a callback to `path`, ends the job, and waits for the callback to settle. */
async function settledCallback(path: string): Promise<JobEvent[]> {
  const res = await hub.run(TOKENS.acme, {
    request_id: rid(),
    route: "demo.echo",
    input: "hello",
    callback_url: `${receiverUrl}${path}`,
  });
  expect(res.status).toBe(202);
  const { job_id: jobId } = (await res.json()) as { job_id: string };
  await hub.finish("acme", jobId);
  return waitFor(`the callback of ${jobId} to settle`, async () => {
    const events = await hub.cbEvents("acme", jobId);
    const type = events.at(-1)?.type;
    return type === "callback.delivered" || type === "callback.failed" ? events : undefined;
  });
}

describe("callbacks.max_response_bytes", () => {
  test("the callback service takes the cap from the config", () => {
    const yaml = callbackYaml("nats://127.0.0.1:1").replace(
      "callbacks:\n",
      "callbacks:\n  max_response_bytes: 200000\n",
    );
    expect(callbackSettings(parseConfig(yaml, {})).maxResponseBytes).toBe(200_000);
    expect(callbackSettings(parseConfig(callbackYaml("nats://127.0.0.1:1"), {}))).toMatchObject({
      maxResponseBytes: 65_536,
    });
  });

  test("a value out of range stops start-up naming the key and the bound", () => {
    for (const [value, bound] of [
      ["512", "greater or equal to 1024"],
      ["33554432", "less or equal to 16777216"],
      ["64KiB", "expected integer"],
    ] as const) {
      const attempt = () => parseConfig(`callbacks: { max_response_bytes: ${value} }`, {});
      expect(attempt).toThrow(ConfigError);
      expect(attempt).toThrow(`callbacks.max_response_bytes: expected integer`);
      expect(attempt).toThrow(bound);
    }
  });

  test("an answer above the default but within the configured cap is a delivery", async () => {
    const events = await settledCallback("/roomy");
    expect(events.map((e) => e.type)).toEqual(["callback.delivered"]);
    expect(events[0]?.data).toMatchObject({ status_code: 200 });
    expect(requests.get("/roomy")).toBe(1);
  });

  test("an answer one byte past the cap fails that attempt at the cap (not at the deadline); the retry delivers", async () => {
    const events = await settledCallback("/one-past");
    expect(events.map((e) => e.type)).toEqual(["callback.attempted", "callback.delivered"]);
    expect(events[0]?.data).toMatchObject({
      attempt: 1,
      status_code: 200,
      error_class: "response_too_large",
    });
    expect(requests.get("/one-past")).toBe(2);
  });
});
