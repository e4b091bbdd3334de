/**
 * The projection runner's pure pieces: the ack floor (one ack per round, never above an
 * unwritten message; the position a read model commits) and the held jobs (grouping, heal, which
 * jobs are due in a round).
 */
import { describe, expect, test } from "bun:test";
import type { JsMsg } from "@nats-io/jetstream";
import { PoisonMessageError } from "../../shared/bus/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { AckFloor, decodeDelivery, type HeldJob, HeldJobs } from "../../shared/projection/index.ts";

/** A delivery as the floor and the held jobs see it; its ack is recorded in `acked`. */
function deliveries() {
  const acked: number[] = [];
  const msg = (seq: number, redelivered = false) =>
    ({ seq, info: { redelivered, pending: 0 }, ack: () => acked.push(seq) }) as unknown as JsMsg;
  return { acked, msg };
}

const event = (jobId: string, type: JobEvent["type"] = "job.done") =>
  ({ type, client_id: "acme", job_id: jobId }) as JobEvent;

describe("AckFloor", () => {
  test("acks the highest settled message below the lowest one still unwritten, once", () => {
    const { acked, msg } = deliveries();
    const floor = new AckFloor();
    const [m1, m2, m3, m4] = [msg(1), msg(2), msg(3), msg(4)];
    for (const m of [m1, m2, m3, m4]) floor.delivered(m);
    floor.settled(m1);
    floor.settled(m3);
    floor.settled(m4);
    floor.flush()?.ack();
    expect(acked).toEqual([1]); // 2 is unwritten: 3 and 4 wait
    floor.settled(m2);
    floor.flush()?.ack();
    expect(acked).toEqual([1, 4]); // one ack settles 2..4 (AckPolicy.All)
    floor.flush()?.ack();
    expect(acked).toEqual([1, 4]);
    expect(floor.outstanding).toBe(0);
  });

  test("a redelivery below the newest delivery holds the floor until it is written", () => {
    const { acked, msg } = deliveries();
    const floor = new AckFloor();
    const late = msg(2, true);
    const newer = msg(5);
    floor.delivered(newer);
    floor.delivered(late);
    floor.settled(newer);
    floor.flush()?.ack();
    expect(acked).toEqual([]);
    floor.settled(late);
    floor.flush()?.ack();
    expect(acked).toEqual([5]);
  });

  test("positionIf: the position once the given messages are written, without settling them", () => {
    const { acked, msg } = deliveries();
    const floor = new AckFloor();
    expect(floor.positionIf(new Set())).toBe(0);
    const all = [msg(10), msg(11), msg(12), msg(13)];
    for (const m of all) floor.delivered(m);
    floor.settled(all[0] as JsMsg);
    expect(floor.positionIf(new Set())).toBe(10);
    expect(floor.positionIf(new Set([11]))).toBe(11);
    expect(floor.positionIf(new Set([11, 13]))).toBe(11); // 12 still held
    expect(floor.positionIf(new Set([11, 12, 13]))).toBe(13);
    // It only reads: the floor and its acks are unchanged.
    floor.flush()?.ack();
    expect(acked).toEqual([10]);
    expect(floor.positionIf(new Set())).toBe(10);
  });

  test("positionIf counts a redelivery below the newest as unwritten unless it is in the set", () => {
    const { msg } = deliveries();
    const floor = new AckFloor();
    const newer = msg(8);
    floor.delivered(newer);
    floor.settled(newer);
    floor.delivered(msg(3, true));
    expect(floor.positionIf(new Set())).toBe(2);
    expect(floor.positionIf(new Set([3]))).toBe(8);
  });
});

describe("HeldJobs", () => {
  const settledState = (state: string) => state === "settled";

  test("groups events by job in arrival order; a redelivery marks its job to heal", () => {
    const { msg } = deliveries();
    const held = new HeldJobs<string>();
    const a = held.add(msg(1), event("a", "run.requested"), 100);
    const b = held.add(msg(2), event("b", "run.requested"), 105);
    expect(held.add(msg(3), event("a"), 110)).toBe(a);
    expect(a.events.map((e) => e.msg.seq)).toEqual([1, 3]);
    expect(a.since).toBe(100);
    expect(a.key).toBe("acme.a");
    expect(a.heal).toBe(false);
    held.add(msg(2, true), event("b", "run.requested"), 120);
    expect(b.heal).toBe(true);
    expect(held.size).toBe(2);
    // a's linger runs out first: its first event came first.
    expect(held.nextDueAt({ lingerMs: 40 })).toBe(140);
    held.written(a);
    expect(held.nextDueAt({ lingerMs: 40 })).toBe(145);
    held.written(b);
    expect(held.nextDueAt({ lingerMs: 40 })).toBeUndefined();
  });

  test("due: touched jobs that settled or heal, and the prefix whose linger ran out", () => {
    const { msg } = deliveries();
    const held = new HeldJobs<string>();
    const old = held.add(msg(1), event("old"), 0);
    const lingering = held.add(msg(2), event("lingering"), 70);
    const done = held.add(msg(3), event("done"), 90);
    const healing = held.add(msg(4, true), event("healing"), 95);
    const open = held.add(msg(5), event("open"), 95);
    old.state = "open";
    lingering.state = "open";
    done.state = "settled";
    open.state = "open";
    const touched = new Set<HeldJob<string>>([done, healing, open]);
    const due = held.due({ now: 100, lingerMs: 40, touched, settled: settledState, all: false });
    expect(new Set(due)).toEqual(new Set([done, healing, old]));
    // A settled job not touched this round waits for its linger (it was due when touched).
    expect(
      held.due({ now: 100, lingerMs: 40, touched: new Set(), settled: settledState, all: false }),
    ).toEqual([old]);
    expect(
      held.due({ now: 100, lingerMs: 40, touched, settled: settledState, all: true }),
    ).toHaveLength(5);
  });

  test("an unloaded job is due only by its linger; a written one leaves the group", () => {
    const { msg } = deliveries();
    const held = new HeldJobs<string>();
    const job = held.add(msg(1), event("x"), 0);
    const touched = new Set([job]);
    expect(held.due({ now: 10, lingerMs: 100, touched, settled: () => true, all: false })).toEqual(
      [],
    );
    expect(held.due({ now: 100, lingerMs: 100, touched, settled: () => true, all: false })).toEqual(
      [job],
    );
    held.written(job);
    expect(held.has(job)).toBe(false);
    // The job's next event starts a new group.
    const next = held.add(msg(2), event("x"), 200);
    expect(next).not.toBe(job);
    expect(next.since).toBe(200);
  });

  test("a job past its linger that waits to settle is due when it settles or its wait runs out", () => {
    const { msg } = deliveries();
    const held = new HeldJobs<string>();
    const waiting = held.add(msg(1), event("waiting", "run.requested"), 0);
    const open = held.add(msg(2), event("open", "run.requested"), 10);
    const later = held.add(msg(3), event("later", "run.requested"), 20);
    waiting.state = "awaiting callback";
    open.state = "open";
    later.state = "awaiting callback";
    const wait = {
      lingerMs: 100,
      settleWaitMs: 500,
      settled: settledState,
      waitsToSettle: (state: string) => state === "awaiting callback",
      all: false,
    };
    const none = new Set<HeldJob<string>>();
    // At 125 every linger ran out: the open job is written, the two that wait to settle are not.
    expect(held.due({ ...wait, now: 125, touched: none })).toEqual([open]);
    held.written(open);
    expect(held.size).toBe(2);
    expect(held.nextDueAt(wait)).toBe(500);
    // The settling event joins its job's group; the job is due once it is settled.
    expect(held.add(msg(4), event("later", "callback.delivered"), 200)).toBe(later);
    later.state = "settled";
    expect(held.due({ ...wait, now: 200, touched: new Set([later]) })).toEqual([later]);
    held.written(later);
    expect(held.has(later)).toBe(false);
    // The other one is written when its settle wait runs out, not before.
    expect(held.due({ ...wait, now: 499, touched: none })).toEqual([]);
    expect(held.due({ ...wait, now: 500, touched: none })).toEqual([waiting]);
    // Stopping writes the waiting jobs too.
    expect(held.due({ ...wait, now: 500, touched: none, all: true })).toEqual([waiting]);
  });

  test("without waitsToSettle, or with a settle wait below the linger, the linger decides", () => {
    const { msg } = deliveries();
    const held = new HeldJobs<string>();
    const job = held.add(msg(1), event("x"), 0);
    job.state = "awaiting callback";
    const base = { now: 100, touched: new Set<HeldJob<string>>(), settled: settledState };
    expect(held.due({ ...base, lingerMs: 100, all: false })).toEqual([job]);
    const short = { lingerMs: 100, settleWaitMs: 50, waitsToSettle: () => true, all: false };
    expect(held.due({ ...base, ...short })).toEqual([job]);
    expect(held.nextDueAt(short)).toBe(100);
  });

  test("a job whose write failed is due in the next round, once, not after its linger", () => {
    const { msg } = deliveries();
    const held = new HeldJobs<string>();
    const job = held.add(msg(1), event("x"), 0);
    const quiet = { now: 10, lingerMs: 1_000, touched: new Set<HeldJob<string>>(), all: false };
    held.retry(job);
    expect(held.due({ ...quiet, settled: () => false })).toEqual([job]);
    expect(held.due({ ...quiet, settled: () => false })).toEqual([]);
    held.retry(job);
    held.written(job);
    expect(held.due({ ...quiet, settled: () => false })).toEqual([]);
  });
});

describe("decodeDelivery", () => {
  const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
  /** A delivery whose bytes count their reads. */
  const delivery = (data: Uint8Array) => {
    const reads = { n: 0 };
    const msg = {
      get data() {
        reads.n++;
        return data;
      },
    } as unknown as JsMsg;
    return { msg, reads };
  };

  test("decodes a delivery once however many lanes read it, and they share the event", () => {
    const event = {
      id: "evt_1",
      type: "job.running",
      schema_version: 1,
      job_id: "job_0123456789abcdefghijkl",
      client_id: "acme",
      occurred_at: "2026-11-26T00:00:00.000Z",
      data: {},
    };
    const { msg, reads } = delivery(bytes(event));
    const first = decodeDelivery(msg);
    const second = decodeDelivery(msg);
    expect(first.type).toBe("job.running");
    expect(second).toBe(first);
    expect(reads.n).toBe(1);
  });

  test("a poison delivery throws its PoisonMessageError to every lane, decoded once", () => {
    const { msg, reads } = delivery(new TextEncoder().encode("{x"));
    expect(() => decodeDelivery(msg)).toThrow(PoisonMessageError);
    expect(() => decodeDelivery(msg)).toThrow(PoisonMessageError);
    expect(reads.n).toBe(1);
  });
});
