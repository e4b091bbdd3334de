/**
 * The event path's own header code (shared/nats/headers.ts) against a real nats-server: what it
 * writes is what nats.js and the server read (the JetStream guards included), what it reads is
 * what nats.js's decoder reads, and its fast paths are the ones taken.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  DeliverPolicy,
  type JetStreamClient,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { EVENT_TYPE_HEADER, TRACEPARENT_HEADER } from "../../shared/bus/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { appendEvent, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { headerOf, headersOf, readsRawHeaders } from "../../shared/nats/headers.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";

const STREAM = "HEADERS_TEST";
const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
let nats: TestNats;
let js: JetStreamClient;

const requested = (jobId: string): JobEvent => ({
  id: `evt_${jobId}`,
  type: "run.requested",
  schema_version: 1,
  job_id: jobId,
  client_id: "acme",
  occurred_at: "2026-11-26T00:00:00.000Z",
  data: {
    request_id: `r_${jobId}`,
    route: "demo.echo",
    input: "hi",
    fingerprint: "0".repeat(64),
  },
});

async function lastOn(subject: string): Promise<JsMsg> {
  const jsm = await jetstreamManager(nats.nc);
  const consumer = await jsm.consumers.add(STREAM, {
    filter_subject: subject,
    deliver_policy: DeliverPolicy.LastPerSubject,
  });
  const msg = await (await js.consumers.get(STREAM, consumer.name)).next({ expires: 2_000 });
  if (msg === null) throw new Error(`nothing on ${subject}`);
  return msg;
}

beforeAll(async () => {
  nats = await startNats();
  const jsm = await jetstreamManager(nats.nc);
  await jsm.streams.add({ name: STREAM, subjects: ["sy.evt.>", "plain.>"] });
  js = jetstream(nats.nc);
});

afterAll(() => nats.stop());

describe("event headers", () => {
  test("given an appended event, the stored headers read the same through nats.js and headerOf", async () => {
    const appended = await appendEvent(
      { js: js, layout: SINGLE_PARTITION_LAYOUT },
      requested("job_h1"),
      {
        traceparent: TRACEPARENT,
        expectedLastSubjectSeq: 0,
        msgId: "job_h1",
      },
    );
    expect(appended.kind).toBe("appended");
    const msg = await lastOn("sy.evt.acme.job_h1.>");
    expect(readsRawHeaders(msg)).toBe(true);
    for (const name of [EVENT_TYPE_HEADER, TRACEPARENT_HEADER, "Nats-Msg-Id"]) {
      expect(headerOf(msg, name)).toBe(msg.headers?.get(name) as string);
    }
    expect(headerOf(msg, EVENT_TYPE_HEADER)).toBe("run.requested");
    expect(headerOf(msg, TRACEPARENT_HEADER)).toBe(TRACEPARENT);
    expect(headerOf(msg, "Nats-Msg-Id")).toBe("job_h1");
    // Exact names, as nats.js's get: another case or a longer name is another header.
    expect(headerOf(msg, "Traceparent")).toBeUndefined();
    expect(headerOf(msg, "parent")).toBeUndefined();
  });

  test("the JetStream guards set through headersOf still hold: msg id and expected sequence", async () => {
    const event = requested("job_h2");
    expect(
      (await appendEvent({ js: js, layout: SINGLE_PARTITION_LAYOUT }, event, { msgId: "job_h2" }))
        .kind,
    ).toBe("appended");
    expect(
      (await appendEvent({ js: js, layout: SINGLE_PARTITION_LAYOUT }, event, { msgId: "job_h2" }))
        .kind,
    ).toBe("duplicate");
    const other = { ...event, id: "evt_other" };
    const guarded = await appendEvent({ js: js, layout: SINGLE_PARTITION_LAYOUT }, other, {
      msgId: "job_h2b",
      expectedLastSubjectSeq: 0,
    });
    expect(guarded.kind).toBe("conflict");
  });

  test("a message without headers, or without the one asked for, reads undefined", async () => {
    await js.publish("plain.a", "no headers");
    expect(headerOf(await lastOn("plain.a"), TRACEPARENT_HEADER)).toBeUndefined();
    const h = natsHeaders();
    h.set("X-traceparent", "not this one");
    h.set("Empty", "");
    await js.publish("plain.b", "other headers", { headers: h });
    const msg = await lastOn("plain.b");
    expect(headerOf(msg, TRACEPARENT_HEADER)).toBeUndefined();
    expect(headerOf(msg, "Empty")).toBeUndefined();
    expect(headerOf(msg, "X-traceparent")).toBe("not this one");
  });

  test("a core NATS message reads through the same path", async () => {
    const sub = nats.nc.subscribe("core.headers", { max: 1 });
    nats.nc.publish("core.headers", "x", { headers: headersOf({ traceparent: TRACEPARENT }) });
    for await (const msg of sub) {
      expect(readsRawHeaders(msg)).toBe(true);
      expect(headerOf(msg, TRACEPARENT_HEADER)).toBe(TRACEPARENT);
    }
  });

  test("a value with CR or LF is refused, as nats.js refuses it; values are trimmed", () => {
    expect(() => headersOf({ traceparent: "a\r\nInjected: yes" })).toThrow(/\\r or \\n/);
    expect(headersOf({ "Sy-Event-Type": " job.done " }).get("Sy-Event-Type")).toBe("job.done");
  });
});
