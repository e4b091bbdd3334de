import { describe, expect, test } from "bun:test";
import { createSharedRead } from "../../services/runtime/shared-read.ts";

/** A read that counts its calls and ends only when released. */
function heldRead() {
  let reads = 0;
  const releases: (() => void)[] = [];
  const read = () => {
    reads += 1;
    return new Promise<void>((resolve) => releases.push(resolve));
  };
  const releaseAll = () => {
    for (const release of releases.splice(0)) release();
  };
  return { read, reads: () => reads, releaseAll };
}

// The scrape's JetStream read (services/runtime/consumer-stats.ts): scrapes that arrive together
// share one read, and one that hangs leaves the scrape with the last values.
describe("a shared read", () => {
  test("callers that arrive while a read runs share it: one read, and each ends with it", async () => {
    const held = heldRead();
    const refresh = createSharedRead({ read: held.read, timeoutMs: 60_000 });
    const ended: number[] = [];
    const callers = [1, 2, 3].map((n) => refresh().then(() => ended.push(n)));
    expect(held.reads()).toBe(1);
    await Promise.resolve();
    expect(ended).toEqual([]);
    held.releaseAll();
    await Promise.all(callers);
    expect(ended.sort()).toEqual([1, 2, 3]);
    expect(held.reads()).toBe(1);
  });

  test("a read that hangs: callers go on without it and start no other; once it ends, the next caller reads again", async () => {
    const held = heldRead();
    const refresh = createSharedRead({ read: held.read, timeoutMs: 1 });
    // Resolving at all proves the bound: the read never ends until released.
    await Promise.all([refresh(), refresh(), refresh()]);
    expect(held.reads()).toBe(1);
    await refresh();
    expect(held.reads()).toBe(1);
    held.releaseAll();
    await Bun.sleep(0);
    void refresh();
    expect(held.reads()).toBe(2);
    held.releaseAll();
  });
});
