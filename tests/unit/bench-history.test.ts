import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  HISTORY_MARK,
  LATEST_END,
  LATEST_START,
  type RecordedRun,
  runTime,
  summarise,
  withHistoryEntry,
  withLatest,
} from "../../bench/history.ts";

// bench/history.ts turns a results file into the current figures of docs/performance.md and an
// entry of docs/history/performance.md. Pure text in, text out; the real docs only supply markers.

const ROOT = join(import.meta.dir, "../..");

const perUnit = (stored: number, kv: number) => ({
  stored,
  storedStreams: stored - kv,
  storedKv: kv,
  bytes: 2391.4,
  publishes: stored,
  deliveries: 8,
  acks: 2.04,
  directGets: 0.02,
  pulls: 0.1,
  apiCalls: 0,
});

function run(startedAt: string): RecordedRun {
  return {
    startedAt,
    machine: { cores: 2, cpuModel: "AMD EPYC", memoryGb: 23.5 },
    versions: { bun: "1.4.5", nats: "2.9.10", hub: "0.2.0 (daf0510)" },
    settings: { rate: 500, peers: ["bullmq", "floor"] },
    scenarios: {
      ingress: {},
      e2e: {
        hub: {
          closed: { phase: { jetstream: { perUnit: perUnit(5.08, 2.08) } } },
          rate: { phase: { jetstream: { perUnit: perUnit(4.01, 1.01) } } },
        },
      },
    },
    goals: [
      {
        goal: "e2e done/s ÷ BullMQ",
        value: "0.33 (831 vs 2,537/s)",
        target: "≥ 1.00",
        met: false,
        floor: { value: "0.70", met: false },
        floorSplit: { value: "0.47", met: false },
        floorFeed: { value: "0.41", met: false },
      },
      { goal: "ingress ÷ ceiling", value: "0.95", target: "≥ 0.80", met: true },
      { goal: "idle CPU of the whole hub", value: "–", target: "≤ 0.01 cores", met: null },
    ],
  };
}

describe("summarise", () => {
  const text = summarise(
    run("2026-11-26T10:12:18.161Z"),
    "bench/results/2026-11-26T10-12-18-161Z.json",
  );

  test("names the time, the scenarios, the peers, the versions, the machine and the results file", () => {
    expect(text.split("\n")[0]).toBe(
      "Run of 2026-11-26 10:12 UTC: scenarios ingress, e2e; peers bullmq, floor; hub 0.2.0 (daf0510), " +
        "Bun 1.4.5, nats-server 2.9.10; 2 cores (AMD EPYC), 23.5 GB; results file " +
        "`bench/results/2026-11-26T10-12-18-161Z.json`.",
    );
  });

  test("says when each system's e2e figures are its median of interleaved rounds", () => {
    const base = run("2026-11-28T05:53:44.377Z");
    const rounds = { ...base, settings: { ...base.settings, e2eRounds: 5 } };
    expect(summarise(rounds, "r.json").split("\n")[0]).toContain(
      "scenarios ingress, e2e (5 interleaved rounds, each system's median); peers",
    );
    const one = { ...base, settings: { ...base.settings, e2eRounds: 1 } };
    expect(summarise(one, "r.json").split("\n")[0]).toContain("scenarios ingress, e2e; peers");
  });

  test("with rounds, the hub's ratio to each peer round by round: median and range", () => {
    const base = run("2026-11-28T07:44:09.540Z");
    const e2e = base.scenarios.e2e;
    if (!e2e) throw new Error("the fixture has an e2e scenario");
    const byRound = {
      "bullmq-node": {
        donePerSec: [1.12, 1, 1.12, 0.89, 0.96],
        jobsPerCpuSec: [1.07, 0.94, 1.04, 0.83, 0.91],
        median: { donePerSec: 1, jobsPerCpuSec: 0.94 },
      },
    };
    const summary = summarise(
      { ...base, scenarios: { ...base.scenarios, e2e: { ...e2e, byRound } } },
      "r.json",
    );
    expect(summary).toContain(
      "The hub ÷ each peer round by round, median (range): bullmq-node: done/s 1.00 (0.89–1.12), jobs per CPU-second 0.94 (0.83–1.07).",
    );
    expect(summarise(base, "r.json")).not.toContain("round by round");
  });

  test("one table row per goal, with the three floors and the status the report gives", () => {
    expect(text).toContain("| goal | hub | JetStream floor | split floor | feed floor | status |");
    expect(text).toContain(
      "| e2e done/s ÷ BullMQ ≥ 1.00 | 0.33 (831 vs 2,537/s) | 0.70 | 0.47 | 0.41 | missed; out of reach (the floor misses too) |",
    );
    expect(text).toContain("| ingress ÷ ceiling ≥ 0.80 | 0.95 |  |  |  | met |");
    expect(text).toContain(
      "| idle CPU of the whole hub ≤ 0.01 cores | – |  |  |  | not measured |",
    );
  });

  test("JetStream work per job for the closed loop and the open loop's rate", () => {
    expect(text).toContain(
      "JetStream work per job, e2e closed loop: stored 5.08 (3.00 in streams + 2.08 KV writes), 2,391 B; " +
        "deliveries 8.00; acks 2.04; direct gets 0.02; API calls 0.00. At 500 jobs/s: stored 4.01",
    );
  });

  test("a run without the e2e scenario has no JetStream line", () => {
    const { e2e: _e2e, ...rest } = run("2026-11-26T10:12:18.161Z").scenarios;
    const summary = summarise({ ...run("2026-11-26T10:12:18.161Z"), scenarios: rest }, "r.json");
    expect(summary).not.toContain("JetStream work");
  });
});

describe("withLatest", () => {
  test("replaces only the text between the markers", () => {
    const doc = `# P\n\nintro\n\n${LATEST_START}\nold table\n${LATEST_END}\n\nprose after\n`;
    expect(withLatest(doc, "new table")).toBe(
      `# P\n\nintro\n\n${LATEST_START}\nnew table\n${LATEST_END}\n\nprose after\n`,
    );
  });

  test("a page without the markers is an error, not a silent append", () => {
    expect(() => withLatest("# P\n", "x")).toThrow("latest-run");
  });

  test("docs/performance.md has the markers, in order", () => {
    const doc = readFileSync(join(ROOT, "docs/performance.md"), "utf8");
    const updated = withLatest(doc, "SUMMARY");
    expect(updated).toContain(`${LATEST_START}\nSUMMARY\n${LATEST_END}`);
    expect(updated.length).toBeLessThan(doc.length);
  });
});

describe("withHistoryEntry", () => {
  const base = `# History\n\n${HISTORY_MARK}\n\n### hand-written\n`;

  test("adds each run after the marker, newest first, once", () => {
    const older = run("2026-11-26T10:12:18.161Z");
    const newer = run("2026-11-27T08:00:00.000Z");
    let history = withHistoryEntry(base, older, "older summary");
    history = withHistoryEntry(history, newer, "newer summary");
    expect(withHistoryEntry(history, older, "older summary")).toBe(history);
    const order = ["2026-11-27 08:00 UTC", "2026-11-26 10:12 UTC", "### hand-written"].map((s) =>
      history.indexOf(s),
    );
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(order[0]).toBeGreaterThan(history.indexOf(HISTORY_MARK));
  });

  test("docs/history/performance.md has the marker", () => {
    const history = readFileSync(join(ROOT, "docs/history/performance.md"), "utf8");
    expect(withHistoryEntry(history, run("2030-01-01T00:00:00.000Z"), "S")).toContain(
      `${HISTORY_MARK}\n\n### 2030-01-01 00:00 UTC`,
    );
  });
});

test("runTime refuses what is not an ISO timestamp", () => {
  expect(runTime("2026-11-26T10:12:18.161Z")).toBe("2026-11-26 10:12 UTC");
  expect(() => runTime("yesterday")).toThrow("startedAt");
});
