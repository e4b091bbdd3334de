/**
 * bench/read-models.ts end to end on a small count: it starts its own nats-server, runs the read
 * models in its process, and prints their CPU per job (user and system), nats-server's and its
 * peak RSS; with a backlog, the index's catch-up (or a rebuild of the index) first, with where the
 * process's memory was; a bad setting stops it with a message naming the key.
 */
import { describe, expect, test } from "bun:test";
import { runToEnd } from "../helpers/run.ts";

const run = (env: Record<string, string>) =>
  runToEnd([process.execPath, "bench/read-models.ts"], { env: { ...process.env, ...env } });

const FIGURE = "(\\d+(?:\\.\\d+)?)";

/** Runs the harness with `env`, expects a clean exit, and returns what it printed. */
async function printed(env: Record<string, string>): Promise<string> {
  const { stdout, stderr, code } = await run(env);
  expect(stderr).toBe("");
  expect(code).toBe(0);
  return stdout;
}

/** The figures of the one printed line matching `line` (FIGURE marks each), or undefined. */
const figures = (stdout: string, line: string) =>
  new RegExp(`^${line}$`, "m").exec(stdout)?.slice(1).map(Number);

/** The memory as the harness prints it: RSS, JS heap live and committed, external, ArrayBuffers. */
const MEMORY = `RSS ${FIGURE} MB \\(JS heap ${FIGURE} MB live of ${FIGURE} committed; ${FIGURE} MB outside it owned by JS objects, ${FIGURE} of them ArrayBuffers\\)`;

/** The line reporting a fold of the 500-job backlog (a catch-up or a rebuild). */
const foldLine = (what: string) =>
  `${what} of 500 jobs \\(1500 events\\): ${FIGURE} s; before: ${MEMORY}; at most: ${MEMORY}; after: RSS ${FIGURE} MB; the allocator's peak commit ${FIGURE} MB`;

/** A fold took time, its peak is at least where it began, and the heap holds something. */
function expectFoldFigures(figures: readonly number[]): void {
  const [seconds, before, , , , , most, live, committed] = figures;
  expect(seconds).toBeGreaterThan(0);
  expect(most).toBeGreaterThanOrEqual(before ?? Number.POSITIVE_INFINITY);
  expect(live).toBeGreaterThan(0);
  expect(committed).toBeGreaterThanOrEqual(live ?? Number.POSITIVE_INFINITY);
}

describe("bench/read-models.ts", () => {
  test("prints the read models' CPU per job, nats-server's and the peak RSS", async () => {
    const stdout = await printed({
      READ_MODELS_JOBS: "300",
      READ_MODELS_ROUNDS: "1",
      READ_MODELS_RATE: "1000",
    });
    const round = figures(
      stdout,
      `round 1: read models ${FIGURE} µs/job \\(user ${FIGURE}, system ${FIGURE}\\), nats-server ${FIGURE}`,
    );
    expect(round).toBeDefined();
    const [all, user, system] = round ?? [];
    expect(all).toBeGreaterThan(0);
    expect(all).toBeCloseTo((user ?? 0) + (system ?? 0), 0);
    const summary = figures(
      stdout,
      `read models \\(index on, 300 jobs at 1000/s, median of 1\\): ${FIGURE} µs/job .*; peak RSS ${FIGURE} MB`,
    );
    expect(summary?.[1]).toBeGreaterThan(0);
  }, 60_000);

  test("with a backlog, reports the index's catch-up of it before the rounds", async () => {
    const stdout = await printed({
      READ_MODELS_BACKLOG: "500",
      READ_MODELS_JOBS: "200",
      READ_MODELS_ROUNDS: "1",
    });
    const catchUp = figures(stdout, foldLine("catch-up"));
    expect(catchUp).toBeDefined();
    expectFoldFigures(catchUp ?? []);
    // The catch-up comes first, then the round.
    expect(stdout.indexOf("catch-up of")).toBeLessThan(stdout.indexOf("round 1:"));
  }, 90_000);

  test("with READ_MODELS_REBUILD, reports a rebuild of the index from the backlog instead", async () => {
    for (const [rebuild, what] of [
      ["1", "index rebuild"],
      ["2", "index rebuild, no collector"],
    ] as const) {
      const stdout = await printed({
        READ_MODELS_BACKLOG: "500",
        READ_MODELS_REBUILD: rebuild,
        READ_MODELS_JOBS: "200",
        READ_MODELS_ROUNDS: "1",
      });
      const folded = figures(stdout, foldLine(what));
      expect(folded).toBeDefined();
      expectFoldFigures(folded ?? []);
      expect(stdout).not.toContain("catch-up of");
    }
  }, 120_000);

  test("a READ_MODELS_REBUILD out of range, or without a backlog, stops it naming the keys", async () => {
    const settings: Record<string, string>[] = [
      { READ_MODELS_REBUILD: "3", READ_MODELS_BACKLOG: "500" },
      { READ_MODELS_REBUILD: "1" },
    ];
    for (const env of settings) {
      const { stderr, code } = await run(env);
      expect(code).toBe(2);
      expect(stderr).toContain(
        "READ_MODELS_REBUILD must be 0, 1 or 2, and 1 or 2 only with READ_MODELS_BACKLOG",
      );
    }
  });

  test("a READ_MODELS_RATE below its least stops it with a message naming the key", async () => {
    const { stderr, code } = await run({ READ_MODELS_RATE: "10" });
    expect(code).toBe(2);
    expect(stderr).toContain("READ_MODELS_RATE must be a whole number of at least 100; got '10'");
  });
});
