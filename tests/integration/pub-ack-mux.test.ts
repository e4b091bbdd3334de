/**
 * The hub's JetStream publish (shared/nats/pub-ack-mux.ts) against a real nats-server: the
 * PubAcks, the errors and the KV writes are what nats.js's `js.publish` gives, and the timeouts
 * and a closed connection end every pending publish.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  JetStreamApiError,
  type JetStreamClient,
  jetstream,
  jetstreamManager,
  PubHeaders,
} from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import {
  ClosedConnectionError,
  connect,
  RequestError,
  TimeoutError,
} from "@nats-io/transport-node";
import { classifyNatsError, isJsError } from "../../shared/bus/index.ts";
import { UnavailableError } from "../../shared/errors/index.ts";
import { headersOf, muxPubAcks } from "../../shared/nats/index.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";

let nats: TestNats;
let js: JetStreamClient;
const data = new TextEncoder().encode("{}");

beforeAll(async () => {
  nats = await startNats();
  const jsm = await jetstreamManager(nats.nc);
  await jsm.streams.add({ name: "MUX", subjects: ["mux.>"], duplicate_window: 60_000_000_000 });
  js = muxPubAcks(jetstream(nats.nc), { nc: nats.nc, inboxPrefix: "_INBOX_mux" });
});

/** How many PubAcks came back on the publisher's own inbox while `fn` ran (seen from outside). */
async function acksOnInbox(fn: () => Promise<unknown>): Promise<number> {
  const observer = await connect({ servers: nats.url });
  try {
    let seen = 0;
    observer.subscribe("_INBOX_mux.>", {
      callback: () => {
        seen++;
      },
    });
    await observer.flush();
    await fn();
    await observer.flush();
    return seen;
  } finally {
    await observer.close();
  }
}

afterAll(async () => {
  await nats?.[Symbol.asyncDispose]();
});

describe("muxPubAcks", () => {
  test("a publish resolves with its PubAck; a repeated message id is a duplicate", async () => {
    const headers = () => headersOf({ [PubHeaders.MsgIdHdr]: "m-1" });
    const acks = await acksOnInbox(async () => {
      const first = await js.publish("mux.a", data, { headers: headers() });
      expect(first).toMatchObject({ stream: "MUX", duplicate: false });
      const again = await js.publish("mux.a", data, { headers: headers() });
      expect(again).toMatchObject({ stream: "MUX", seq: first.seq, duplicate: true });
    });
    expect(acks).toBe(2);
  });

  test("64 publishes in flight each get their own sequence", async () => {
    const acks = await Promise.all(
      Array.from({ length: 64 }, (_, i) => js.publish(`mux.many.${i}`, data)),
    );
    expect(new Set(acks.map((a) => a.seq)).size).toBe(64);
  });

  test("a failed expectation throws the server's JetStream error, by code", async () => {
    const ack = await js.publish("mux.guarded", data);
    const stale = js.publish("mux.guarded", data, {
      headers: headersOf({ [PubHeaders.ExpectedLastSubjectSequenceHdr]: `${ack.seq - 1}` }),
    });
    const err = await stale.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JetStreamApiError);
    expect(isJsError(err, "wrongLastSequence")).toBe(true);
  });

  test("msgID and expect become the headers nats.js would set", async () => {
    const acks = await acksOnInbox(async () => {
      const first = await js.publish("mux.opts", data, { msgID: "opt-1" });
      const again = await js.publish("mux.opts", data, { msgID: "opt-1" });
      expect(again).toMatchObject({ seq: first.seq, duplicate: true });
      const err = await js
        .publish("mux.opts", data, { expect: { lastSubjectSequence: first.seq - 1 } })
        .catch((e: unknown) => e);
      expect(isJsError(err, "wrongLastSequence")).toBe(true);
      const guarded = await js.publish("mux.opts", data, {
        msgID: "opt-2",
        expect: { lastSubjectSequence: first.seq, streamName: "MUX" },
        headers: headersOf({ "Sy-Event-Type": "x" }),
      });
      expect(guarded.seq).toBeGreaterThan(first.seq);
      const wrongStream = await js
        .publish("mux.opts", data, { expect: { streamName: "OTHER" } })
        .catch((e: unknown) => e);
      expect(wrongStream).toBeInstanceOf(JetStreamApiError);
    });
    expect(acks).toBe(5);
  });

  test("other options (retries) go through nats.js's own publish", async () => {
    const acks = await acksOnInbox(async () => {
      const ack = await js.publish("mux.retries", data, { retries: 2 });
      expect(ack.stream).toBe("MUX");
    });
    expect(acks).toBe(0);
  });

  test("no stream for the subject: a no-responders RequestError, answered 503 unavailable", async () => {
    const err = await js.publish("nostream.x", data).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestError);
    expect((err as RequestError).isNoResponders()).toBe(true);
    expect(classifyNatsError(err)).toBeInstanceOf(UnavailableError);
  });

  test("an ack that never comes times out after the publish's timeout", async () => {
    // A core subscriber that never answers: the server routes the message to it, no PubAck comes.
    const silent = nats.nc.subscribe("silent.x");
    try {
      const started = Date.now();
      const err = await js.publish("silent.x", data, { timeout: 300 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TimeoutError);
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    } finally {
      silent.unsubscribe();
    }
  });

  test("a KV bucket opened through it writes through it, compare-and-set included", async () => {
    const kv = await new Kvm(js).create("mux_kv", { history: 1 });
    let rev = 0;
    const acks = await acksOnInbox(async () => {
      rev = await kv.create("k", data);
      expect(await kv.update("k", data, rev)).toBeGreaterThan(rev);
    });
    expect(acks).toBe(2);
    const err = await kv.update("k", data, rev).catch((e: unknown) => e);
    expect(isJsError(err, "wrongLastSequence")).toBe(true);
    expect(await kv.create("k", data).catch((e: unknown) => e)).toBeInstanceOf(JetStreamApiError);
  });

  test("closing the connection ends a pending publish with ClosedConnectionError", async () => {
    const nc = await connect({ servers: nats.url });
    const own = muxPubAcks(jetstream(nc), { nc, inboxPrefix: "_INBOX_mux" });
    nc.subscribe("silent.closing");
    await nc.flush();
    const pending = own.publish("silent.closing", data, { timeout: 30_000 }).catch((e) => e);
    await nc.close();
    expect(await pending).toBeInstanceOf(ClosedConnectionError);
  });
});
