import { heapStats } from "bun:jsc";
import { describe, expect, test } from "bun:test";
import { TaskSet } from "../../shared/worker/index.ts";

function deferred() {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("TaskSet", () => {
  test("freed() resolves at once when nothing runs", async () => {
    const tasks = new TaskSet();
    await tasks.freed();
    expect(tasks.size).toBe(0);
  });

  test("freed() resolves when one task settles, fulfilled or rejected", async () => {
    const tasks = new TaskSet();
    const a = deferred();
    const b = deferred();
    tasks.add(a.promise);
    tasks.add(b.promise.catch(() => {}));
    let woke = 0;
    const waiting = tasks.freed().then(() => woke++);
    await Bun.sleep(0);
    expect(woke).toBe(0);
    b.reject(new Error("failed"));
    await waiting;
    expect(woke).toBe(1);
    expect(tasks.size).toBe(1);
    a.resolve();
    await tasks.settled();
    expect(tasks.size).toBe(0);
  });

  test("waiting many times on a full set leaves no reactions behind", async () => {
    const tasks = new TaskSet();
    const running = Array.from({ length: 32 }, deferred);
    for (const d of running) tasks.add(d.promise);
    const before = heapStats().objectTypeCounts.SlimPromiseReaction ?? 0;
    // A saturated pull loop calls freed() once per message; each wait must cost O(1), not one
    // reaction per running task (Promise.race over the set did: 32 × 5,000 here).
    const waits = Array.from({ length: 5_000 }, () => tasks.freed());
    Bun.gc(true);
    const after = heapStats().objectTypeCounts.SlimPromiseReaction ?? 0;
    expect(after - before).toBeLessThan((32 * 5_000) / 4);
    running[0]?.resolve();
    await Promise.all(waits);
    for (const d of running) d.resolve();
    await tasks.settled();
  });
});
