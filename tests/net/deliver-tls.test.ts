import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { TLSSocket } from "node:tls";
import { createConnectionPool, deliverWebhook, parseCidrList } from "../../shared/net/index.ts";
import { waitFor } from "../helpers/wait.ts";
import { closeServer, listenOnLoopback, toLoopback } from "./servers.ts";

// Self-signed certificate for "rebind.test" (see fixtures/README.md).
const cert = readFileSync(new URL("./fixtures/rebind-test.cert.pem", import.meta.url), "utf8");
const key = readFileSync(new URL("./fixtures/rebind-test.key.pem", import.meta.url), "utf8");
const seen: { host?: string; servername?: string | false | null }[] = [];
let server: Server;
let port = 0;
let handshakes = 0;
/** The TLS connection that carried the last request for each path, and which ones closed. */
const socketOf = new Map<string, TLSSocket>();
const closedSockets = new WeakSet<TLSSocket>();

beforeAll(async () => {
  server = createServer({ key, cert }, (req, res) => {
    seen.push({ host: req.headers.host, servername: (req.socket as TLSSocket).servername });
    socketOf.set(req.url ?? "", req.socket as TLSSocket);
    res.end("ok");
  });
  server.on("secureConnection", (socket: TLSSocket) => {
    handshakes++;
    socket.on("close", () => closedSockets.add(socket));
  });
  port = await listenOnLoopback(server);
});

afterAll(() => closeServer(server));

const allowCidrs = parseCidrList("127.0.0.0/8");
const common = { body: "{}", headers: { "content-type": "application/json" }, allowCidrs };

describe("deliverWebhook over TLS with a pinned address", () => {
  test("SNI and certificate checks use the hostname while connecting to the checked IP", async () => {
    const attempt = await deliverWebhook({
      ...common,
      url: `https://rebind.test:${port}/cb`,
      resolver: toLoopback,
      ca: cert,
    });
    expect(attempt).toMatchObject({ ok: true, status: 200, address: "127.0.0.1" });
    expect(seen.at(-1)).toEqual({ host: `rebind.test:${port}`, servername: "rebind.test" });
  });

  test("an untrusted certificate is a tls failure", async () => {
    const attempt = await deliverWebhook({
      ...common,
      url: `https://rebind.test:${port}/cb`,
      resolver: toLoopback,
    });
    expect(attempt).toMatchObject({ ok: false, errorClass: "tls" });
  });

  test("a certificate for another name is a tls failure", async () => {
    const attempt = await deliverWebhook({
      ...common,
      url: `https://other.test:${port}/cb`,
      resolver: toLoopback,
      ca: cert,
    });
    expect(attempt).toMatchObject({ ok: false, errorClass: "tls" });
  });

  test("a pooled destination reuses one TLS connection and keeps SNI on the hostname", async () => {
    const connections = createConnectionPool();
    const before = handshakes;
    for (let i = 0; i < 5; i++) {
      const attempt = await deliverWebhook({
        ...common,
        url: `https://rebind.test:${port}/pooled`,
        resolver: toLoopback,
        ca: cert,
        connections,
      });
      expect(attempt).toMatchObject({ ok: true, status: 200 });
      expect(seen.at(-1)).toEqual({ host: `rebind.test:${port}`, servername: "rebind.test" });
    }
    expect(handshakes - before).toBe(1);
    // Without the CA the same name and address is another pool entry, and still refused.
    const untrusted = await deliverWebhook({
      ...common,
      url: `https://rebind.test:${port}/pooled`,
      resolver: toLoopback,
      connections,
    });
    expect(untrusted).toMatchObject({ ok: false, errorClass: "tls" });
    connections.close();
  });

  test("idle pooled TLS connections are closed after idleMs, and the next attempt makes a new handshake", async () => {
    const connections = createConnectionPool({ idleMs: 150 });
    const send = () =>
      deliverWebhook({
        ...common,
        url: `https://rebind.test:${port}/idle`,
        resolver: toLoopback,
        ca: cert,
        connections,
      });
    const handshakesBefore = handshakes;
    expect(await send()).toMatchObject({ ok: true, status: 200 });
    const used = socketOf.get("/idle");
    expect(used).toBeDefined();
    await waitFor("the idle connection to close", () => used && closedSockets.has(used), {
      timeoutMs: 5_000,
    });
    expect(await send()).toMatchObject({ ok: true, status: 200 });
    expect(handshakes - handshakesBefore).toBe(2);
    connections.close();
  });
});
