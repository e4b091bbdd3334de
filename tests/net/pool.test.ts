import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import {
  createConnectionPool,
  type DeliverOptions,
  deliverWebhook,
  parseCidrList,
  type Resolver,
} from "../../shared/net/index.ts";
import { waitFor } from "../helpers/wait.ts";
import { closeServer, listenOnLoopback, toLoopback } from "./servers.ts";

/** A node:http receiver that counts the TCP connections it accepted and closed. */
let server: Server;
let port = 0;
let opened = 0;
let requests = 0;
const delayMs = new Map<string, number>();
/** The connection that carried the last request for each path, and whether it has closed. */
const socketOf = new Map<string, Socket>();
const closedSockets = new WeakSet<Socket>();

beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    socketOf.set(req.url ?? "", req.socket);
    req.resume();
    req.on("end", () => {
      const wait = delayMs.get(req.url ?? "") ?? 0;
      setTimeout(() => res.end("ok"), wait);
    });
  });
  server.on("connection", (socket: Socket) => {
    opened++;
    socket.on("close", () => {
      closedSockets.add(socket);
    });
  });
  port = await listenOnLoopback(server);
});

afterAll(() => closeServer(server));

const allowCidrs = parseCidrList("127.0.0.0/8");
const attempt = (url: string, extra: Partial<DeliverOptions> = {}) =>
  deliverWebhook({
    url,
    body: "{}",
    headers: { "content-type": "application/json" },
    allowCidrs,
    resolver: toLoopback,
    timeoutMs: 5_000,
    ...extra,
  });

// Plain HTTP keeps its connections in Bun's fetch (per pinned address and port); the pool's agents,
// their idle timeout and their LRU are TLS's (deliver-tls.test.ts, and the unit tests below).
describe("deliverWebhook with a connection pool", () => {
  test("deliveries to one destination reuse keep-alive connections", async () => {
    const connections = createConnectionPool();
    const before = opened;
    for (let i = 0; i < 20; i++) {
      expect(await attempt(`http://hooks.test:${port}/seq`, { connections })).toMatchObject({
        ok: true,
        status: 200,
      });
    }
    const burst = await Promise.all(
      Array.from({ length: 20 }, () => attempt(`http://hooks.test:${port}/burst`, { connections })),
    );
    expect(burst.every((r) => r.ok)).toBe(true);
    // 20 sequential deliveries share one connection; the burst opens at most 20 more.
    expect(opened - before).toBeLessThanOrEqual(21);
    expect(opened - before).toBeGreaterThanOrEqual(1);
    connections.close();
  });

  test("without a pool every attempt opens its own connection", async () => {
    const before = opened;
    for (let i = 0; i < 5; i++) {
      expect((await attempt(`http://hooks.test:${port}/plain`)).ok).toBe(true);
    }
    expect(opened - before).toBe(5);
  });

  test("a name that now resolves to a refused address is checked again, never sent on the pooled connection", async () => {
    const connections = createConnectionPool();
    let answer = "127.0.0.1";
    const resolver: Resolver = async () => [{ address: answer, family: 4 }];
    const url = `http://rebind.test:${port}/rebind`;
    expect((await attempt(url, { connections, resolver })).ok).toBe(true);
    const seen = requests;
    answer = "10.1.2.3";
    const refused = await attempt(url, { connections, resolver });
    expect(refused).toMatchObject({ ok: false, errorClass: "ssrf_blocked" });
    expect(requests).toBe(seen);
    connections.close();
  });

  test("a receiver slower than the pool's idle timeout still answers on a kept-alive connection", async () => {
    const connections = createConnectionPool({ idleMs: 100 });
    delayMs.set("/slow", 400);
    const result = await attempt(`http://hooks.test:${port}/slow`, { connections });
    expect(result).toMatchObject({ ok: true, status: 200 });
    connections.close();
  });

  test("a receiver that closes idle connections first does not fail the next attempt", async () => {
    const connections = createConnectionPool({ idleMs: 60_000 });
    const previous = server.keepAliveTimeout;
    server.keepAliveTimeout = 50;
    try {
      expect((await attempt(`http://hooks.test:${port}/server-close`, { connections })).ok).toBe(
        true,
      );
      const used = socketOf.get("/server-close");
      await waitFor(
        "the receiver to close the idle connection",
        () => used && closedSockets.has(used),
        {
          timeoutMs: 5_000,
        },
      );
      const again = await attempt(`http://hooks.test:${port}/server-close`, { connections });
      expect(again).toMatchObject({ ok: true, status: 200 });
    } finally {
      server.keepAliveTimeout = previous;
      connections.close();
    }
  });
});

describe("createConnectionPool (TLS agents)", () => {
  const destination = (hostname: string) =>
    ({ hostname, port: "443", address: "192.0.2.10" }) as const;

  test("each name and pinned address has its own agent; the least recently used is closed", () => {
    const connections = createConnectionPool({ maxDestinations: 2 });
    const a = connections.agentFor(destination("a.test"));
    const closedA = spyOn(a, "destroy");
    const b = connections.agentFor(destination("b.test"));
    expect(connections.agentFor(destination("b.test"))).toBe(b);
    expect(connections.agentFor({ ...destination("b.test"), address: "192.0.2.11" })).not.toBe(b);
    expect(closedA).toHaveBeenCalledTimes(1);
    expect(connections.size()).toBe(2);
    connections.close();
    expect(connections.size()).toBe(0);
  });
});
