/**
 * BENCH_NATS_PROFILE=1: the bench's nats-servers get Go's profiler on a free port, whose heap
 * page gives the memory statistics the bench's notes compare (allocations and collections per job).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { natsProfileArgs } from "../../bench/lib/common.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";

let nats: TestNats | undefined;
const saved = process.env.BENCH_NATS_PROFILE;

afterEach(async () => {
  await nats?.stop();
  nats = undefined;
  if (saved === undefined) delete process.env.BENCH_NATS_PROFILE;
  else process.env.BENCH_NATS_PROFILE = saved;
});

describe("natsProfileArgs", () => {
  test("unset: no arguments and no address", () => {
    delete process.env.BENCH_NATS_PROFILE;
    expect(natsProfileArgs()).toEqual({ args: [] });
  });

  test("set: a nats-server started with its arguments serves Go's memory statistics", async () => {
    process.env.BENCH_NATS_PROFILE = "1";
    const profile = natsProfileArgs();
    expect(profile.args[0]).toBe("--profile");
    nats = await startNats({ args: profile.args });
    const page = await (await fetch(`${profile.url}/heap?debug=1`)).text();
    expect(page).toMatch(/^# TotalAlloc = \d+$/m);
    expect(page).toMatch(/^# NumGC = \d+$/m);
  });
});
