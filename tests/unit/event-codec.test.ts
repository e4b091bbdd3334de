/**
 * The event codec every consumer reads with (shared/bus/codec.ts): what the hub's writers store
 * decodes to the same event, and anything that is not a valid event of the union is a
 * PoisonMessageError (code `poison_message`), which consumers terminate instead of retrying.
 */
import { describe, expect, test } from "bun:test";
import {
  checkEvent,
  decodeEvent,
  encodeEvent,
  PoisonMessageError,
} from "../../shared/bus/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";

const envelope = {
  schema_version: 1,
  job_id: "job_AAAAAAAAAAAAAAAAAAAAAA",
  client_id: "acme",
  occurred_at: "2026-11-26T00:00:00.000Z",
} as const;
const run = { request_id: "r1", route: "demo.echo", created_at: envelope.occurred_at };
const EVENTS: readonly JobEvent[] = [
  {
    ...envelope,
    id: "evt_1",
    type: "run.requested",
    data: { request_id: "r1", route: "demo.echo", input: "hi", fingerprint: "0".repeat(64) },
  },
  { ...envelope, id: "evt_2", type: "job.done", data: { output: { n: 1 }, run } },
  { ...envelope, id: "evt_3", type: "callback.delivered", data: { attempts: 1, status_code: 204 } },
];

const bytesOf = (text: string) => new TextEncoder().encode(text);

/** The error decodeEvent throws for these bytes (fails when it throws none). */
function poisonOf(bytes: Uint8Array): PoisonMessageError {
  try {
    decodeEvent(bytes);
  } catch (err) {
    if (err instanceof PoisonMessageError) return err;
    throw err;
  }
  throw new Error("decoded without an error");
}

describe("decodeEvent", () => {
  test("given the bytes a writer stores, it returns the same event", () => {
    for (const event of EVENTS) expect(decodeEvent(encodeEvent(event))).toEqual(event);
  });

  test("given bytes that are not JSON, it throws a poison error", () => {
    const err = poisonOf(bytesOf("{not json"));
    expect(err.code).toBe("poison_message");
    expect(err.message).toBe("event is not JSON");
  });

  test("given JSON that is no event, it throws a poison error naming where it fails", () => {
    for (const value of [null, 42, "text", [], {}]) {
      const err = poisonOf(bytesOf(JSON.stringify(value)));
      expect(err.code).toBe("poison_message");
      expect(err.message).toStartWith("event fails its schema at ");
    }
  });

  test("given an unknown type or schema version, it throws a poison error", () => {
    const done = EVENTS[1] as JobEvent;
    expect(poisonOf(encodeEvent({ ...done, type: "job.exploded" } as never)).code).toBe(
      "poison_message",
    );
    expect(poisonOf(encodeEvent({ ...done, schema_version: 2 } as never)).code).toBe(
      "poison_message",
    );
  });

  test("given a known type whose data breaks its schema, it throws a poison error at that field", () => {
    const requested = EVENTS[0] as JobEvent;
    const bad = { ...requested, data: { ...requested.data, fingerprint: "not-a-sha" } };
    expect(poisonOf(encodeEvent(bad as never)).message).toContain("fails its schema");
    const late = { ...requested, occurred_at: "yesterday" };
    expect(poisonOf(encodeEvent(late as never)).code).toBe("poison_message");
    const extra = { ...requested, surprise: true };
    expect(poisonOf(encodeEvent(extra as never)).code).toBe("poison_message");
  });
});

describe("checkEvent", () => {
  test("returns a valid event as it is and throws a poison error for anything else", () => {
    const event = EVENTS[2] as JobEvent;
    expect(checkEvent(event)).toBe(event);
    expect(() => checkEvent({ ...event, data: { attempts: 0 } })).toThrow(PoisonMessageError);
  });
});
