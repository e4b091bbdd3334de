import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { faultYaml, hubProcs, pool, subjectCounts, submitRun } from "./procs.ts";

// 20,000 submissions (the number issue 7 names) while no executor runs: every accepted run is
// stored and waits in JetStream; once the executor service starts, each completes exactly once.
// Completion is counted from the stream's per-subject counts, not with 20,000 GETs.

const BURST = 20_000;

test("a 20,000-run burst against a stopped executor queues durably and completes once it starts", async () => {
  await using nats = await startNats();
  await using procs = await hubProcs(faultYaml({ natsUrl: nats.url }), nats.url);
  // Ingress only: the projector is not needed to count subjects, and on 2 cores it would compete
  // with the burst for CPU.
  await procs.start("ingress");
  const prefix = `burst${Date.now().toString(36)}`;
  const numbers = Array.from({ length: BURST }, (_, i) => i);
  const accepted = new Set<string>();
  const other: string[] = [];
  const started = performance.now();
  await pool(numbers, 64, async (i) => {
    const body = { request_id: `${prefix}-${i}`, route: "f.echo", input: `n${i}` };
    let res = await submitRun(procs.url(), body);
    // A 503 means nothing was stored: retry with the same request_id.
    for (let retry = 0; res.status === 503 && retry < 20; retry++) {
      await Bun.sleep(50);
      res = await submitRun(procs.url(), body);
    }
    if ((res.status === 202 || res.status === 200) && res.jobId) accepted.add(res.jobId);
    else other.push(`${i}: ${res.status}`);
  });
  const submitSeconds = (performance.now() - started) / 1000;
  expect(other).toEqual([]);
  expect(accepted.size).toBe(BURST);

  const jsm = await jetstreamManager(nats.nc);
  const runs = await subjectCounts(jsm, "sy.evt.ops.*.run");
  expect(Object.keys(runs).length).toBe(BURST);
  expect(Object.keys(await subjectCounts(jsm, "sy.evt.ops.*.job")).length).toBe(0);

  const executorStarted = performance.now();
  await procs.start("executor");
  const counts = await waitFor(
    "every queued run to complete",
    async () => {
      const c = await subjectCounts(jsm, "sy.evt.ops.*.job");
      return Object.keys(c).length >= BURST ? c : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
  const drainSeconds = (performance.now() - executorStarted) / 1000;
  expect([...accepted].filter((id) => counts[`sy.evt.ops.${id}.job`] !== 1)).toEqual([]);
  expect(Object.keys(counts).length).toBe(BURST);
  const runsAfter = await subjectCounts(jsm, "sy.evt.ops.*.run");
  expect(Object.values(runsAfter).every((n) => n === 1)).toBe(true);
  expect(Object.keys(runsAfter).length).toBe(BURST);
  process.stdout.write(
    `burst: ${BURST} accepted in ${submitSeconds.toFixed(1)} s, completed ${drainSeconds.toFixed(1)} s after the executor started\n`,
  );
}, 180_000);
