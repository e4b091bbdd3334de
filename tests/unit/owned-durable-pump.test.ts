import { describe, expect, test } from "bun:test";
import type { JsMsg } from "@nats-io/jetstream";
import { type DeliveryGap, pumpOwnedDurable } from "../../shared/bus/index.ts";
import { waitFor } from "../helpers/wait.ts";

/** A delivery as the pump sees it: only its consumer sequence matters here. */
const delivery = (deliverySequence: number) =>
  ({ seq: deliverySequence, info: { deliverySequence } }) as unknown as JsMsg;

/** An iterable the test feeds one message at a time. */
function feed() {
  const waiting: JsMsg[] = [];
  let next: ((r: IteratorResult<JsMsg>) => void) | undefined;
  let ended = false;
  return {
    send(msg: JsMsg) {
      if (next) {
        next({ value: msg, done: false });
        next = undefined;
      } else waiting.push(msg);
    },
    end() {
      ended = true;
      next?.({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]: () => ({
      next: () =>
        new Promise<IteratorResult<JsMsg>>((resolve) => {
          const msg = waiting.shift();
          if (msg) resolve({ value: msg, done: false });
          else if (ended) resolve({ value: undefined, done: true });
          else next = resolve;
        }),
    }),
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("pumpOwnedDurable: an owned durable's messages into the fold queue", () => {
  test("queues in order, takes nothing while the queue is full, and goes on when room is made", async () => {
    const messages = feed();
    const queue: JsMsg[] = [];
    const pump = pumpOwnedDurable({
      messages,
      running: () => true,
      push: (msg) => queue.push(msg),
      full: () => queue.length >= 2,
      onGap: () => {},
    });
    for (const n of [1, 2, 3]) messages.send(delivery(n));
    await waitFor("two queued", () => queue.length === 2);
    // The third waits: the queue is full.
    await settle();
    expect(queue.map((m) => m.seq)).toEqual([1, 2]);
    queue.length = 0;
    pump.roomMade();
    await waitFor("the third queued", () => queue.length === 1);
    expect(queue.map((m) => m.seq)).toEqual([3]);
    messages.end();
    await pump.done;
  });

  test("stops at a delivery gap (another process pulled) without queueing the message after it", async () => {
    const messages = feed();
    const queue: JsMsg[] = [];
    const gaps: DeliveryGap[] = [];
    const pump = pumpOwnedDurable({
      messages,
      running: () => true,
      push: (msg) => queue.push(msg),
      full: () => false,
      onGap: (gap) => gaps.push(gap),
    });
    for (const n of [1, 2, 5, 6]) messages.send(delivery(n));
    await pump.done;
    expect(queue.map((m) => m.seq)).toEqual([1, 2]);
    expect(gaps).toEqual([{ expected: 3, got: 5 }]);
  });

  test("waits in beforeEach, and ends without queueing once the fold stops running", async () => {
    const messages = feed();
    const queue: JsMsg[] = [];
    let running = true;
    let mayTake = false;
    const pump = pumpOwnedDurable({
      messages,
      running: () => running,
      beforeEach: async () => {
        while (!mayTake && running) await Bun.sleep(1);
      },
      push: (msg) => queue.push(msg),
      full: () => false,
      onGap: () => {},
    });
    messages.send(delivery(1));
    await settle();
    expect(queue).toEqual([]);
    mayTake = true;
    await waitFor("the first queued", () => queue.length === 1);
    expect(queue.map((m) => m.seq)).toEqual([1]);
    running = false;
    messages.send(delivery(2));
    await pump.done;
    expect(queue.map((m) => m.seq)).toEqual([1]);
  });

  test("a beforeEach that answers undefined lets each message through without a wait", async () => {
    const messages = feed();
    const queue: JsMsg[] = [];
    let asked = 0;
    const pump = pumpOwnedDurable({
      messages,
      running: () => true,
      beforeEach: () => {
        asked++;
        return undefined;
      },
      push: (msg) => queue.push(msg),
      full: () => false,
      onGap: () => {},
    });
    for (const n of [1, 2, 3]) messages.send(delivery(n));
    messages.end();
    await pump.done;
    expect(queue.map((m) => m.seq)).toEqual([1, 2, 3]);
    expect(asked).toBe(3);
  });
});
