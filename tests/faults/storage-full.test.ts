import { expect, test } from "bun:test";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { EVENTS_RESERVE_FRACTION } from "../../services/ingress/storage-guard.ts";
import { SERVICE_NAMES } from "../../services/runtime/run.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { keepsByteLimitExactly } from "../../shared/nats/index.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, verifyEchoOutcomes } from "./checks.ts";
import { faultYaml, hubProcs, startAllServices, subjectCounts, submitRun } from "./procs.ts";

// The events stream limited to 512 KiB. New runs are refused (503 storage_full, with a problem
// body) once the stream holds the runs' share of the limit, so the events of accepted runs still
// fit: every 202 is stored and completes before the limit is raised, and nothing refused is
// stored. On nats-server < 2.10.5 (these machines' 2.9.10) the stream holds no byte limit of its
// own: there a stream at max_bytes with discard new drops its oldest messages (nats-server#4771),
// so the ingress's check is the limit. A restart with a larger events_max_bytes lets the refused
// requests through, each exactly once.
//
// Why 512 KiB: far from the limit the ingress decides on a state up to a second old plus the
// growth its own acks show, so what the executor stores after the ingress's last ack (a lagging
// executor's burst of outcomes) is seen only at its next ack or read. The reserve (10%) must hold
// such a burst: here about 80 jobs' outcomes. At 64 KiB it held ten, and in one CI run a burst let
// a run be stored on 78,803 bytes.

const LIMIT = 524_288;
/** What new runs may fill: the limit less the reserve (services/ingress/storage-guard.ts). */
const RUNS_SHARE = LIMIT - Math.ceil(LIMIT * EVENTS_RESERVE_FRACTION);

test("JetStream storage full: 503 storage_full, every 202 stored and finished, recovery after the limit is raised", async () => {
  await using nats = await startNats();
  const small = faultYaml({ natsUrl: nats.url, nats: { events_max_bytes: LIMIT } });
  await using procs = await hubProcs(small, nats.url);
  await startAllServices(procs);
  const load = new Load(procs.url, (request_id) => ({
    request_id,
    route: "f.echo",
    input: `${request_id} ${"x".repeat(200)}`,
  }));
  load.start(4);
  try {
    await waitFor("storage_full refusals", () => load.refusals.length >= 5, { timeoutMs: 20_000 });
  } finally {
    await load.stop();
  }
  expect(load.unexpected).toEqual([]);
  const refusal = load.refusals.at(-1);
  expect(refusal?.status).toBe(503);
  expect(refusal?.headers.get("content-type")).toBe("application/problem+json");
  expect(Number(refusal?.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(refusal?.body).toMatchObject({ status: 503, code: "storage_full" });
  expect(load.unsettled.size).toBeGreaterThan(0);
  expect(load.accepted.size).toBeGreaterThan(10);

  const jsm = await jetstreamManager(nats.nc);
  const version = nats.nc.info?.version ?? "0.0.0";
  const info = await jsm.streams.info(TOPOLOGY.eventsStream);
  expect(info.config.max_bytes).toBe(keepsByteLimitExactly(version) ? LIMIT : -1);
  // No event was ever dropped: the stream still begins at its first sequence.
  expect(info.state.first_seq).toBe(1);
  const runs = await subjectCounts(jsm, "sy.evt.ops.*.run");
  const stored = new Set(Object.keys(runs).map((s) => s.split(".")[3]));
  const accepted = new Set(load.jobIds());
  // Every 202 is stored, and nothing refused is.
  expect([...accepted].filter((id) => !stored.has(id))).toEqual([]);
  expect([...stored].filter((id) => !accepted.has(id as string))).toEqual([]);
  // The accepted runs finish while new runs are refused: their events fit in the reserve, and
  // the stream stays within its limit.
  await verifyEchoOutcomes({ jsm, load, base: procs.url, timeoutMs: 30_000 });
  // No run was accepted into a stream at its limit: the stream held less than LIMIT before each
  // run.requested. (Only the events of jobs accepted before the refusals may take it past.)
  const before = await bytesBeforeEachRun(jsm);
  expect(before.runs).toBe(accepted.size);
  if (before.largest >= LIMIT) {
    // What the guard let through, in stream order: r = run.requested, d = job.done, o = other.
    process.stderr.write(
      `storage-full: stream order ${before.order}\nstorage-full: runs stored past the runs' share (${RUNS_SHARE} bytes): ${before.late.join("; ")}\n`,
    );
  }
  expect(before.largest).toBeLessThan(LIMIT);
  process.stdout.write(
    `storage-full: ${accepted.size} runs accepted, the last on ${before.largest} bytes; the stream holds ${(await jsm.streams.info(TOPOLOGY.eventsStream)).state.bytes} of ${LIMIT} with their outcomes\n`,
  );
  const stillRefused = await submitRun(procs.url(), {
    request_id: "after-full",
    route: "f.echo",
    input: "x",
  });
  expect(stillRefused.status).toBe(503);
  // A request accepted before is still answered as a replay.
  const [firstRequest, firstJob] = [...load.accepted][0] ?? ["", ""];
  const replay = await submitRun(procs.url(), {
    request_id: firstRequest,
    route: "f.echo",
    input: `${firstRequest} ${"x".repeat(200)}`,
  });
  expect(replay.status).toBe(200);
  expect(replay.jobId).toBe(firstJob);

  // Raise the limit: every service restarts with the new config; the first one updates the stream.
  await procs.writeConfig(faultYaml({ natsUrl: nats.url, nats: { events_max_bytes: 8_388_608 } }));
  for (const name of SERVICE_NAMES) await procs.kill(name);
  await startAllServices(procs);
  expect((await jsm.streams.info(TOPOLOGY.eventsStream)).config.max_bytes).toBe(
    keepsByteLimitExactly(version) ? 8_388_608 : -1,
  );
  // The refused requests go through now, with the same request_id.
  await load.settle();
  await verifyEchoOutcomes({ jsm, load, base: procs.url, timeoutMs: 45_000 });
}, 90_000);

/**
 * Walks the events stream in order, adding each message's stored size as nats-server's file store
 * counts it (2.9.10 fileStoreMsgSize: 22 + subject + 4 + header + data + 8), and returns the
 * largest stream size any run.requested was stored on top of.
 */
async function bytesBeforeEachRun(
  jsm: JetStreamManager,
): Promise<{ runs: number; largest: number; order: string; late: string[] }> {
  const info = await jsm.streams.info(TOPOLOGY.eventsStream);
  let total = 0;
  let runs = 0;
  let largest = 0;
  let order = "";
  const late: string[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(TOPOLOGY.eventsStream, { seq });
    if (m === null) continue;
    let header = "NATS/1.0\r\n".length + 2;
    for (const [key, values] of m.header) {
      for (const value of values) header += `${key}: ${value}\r\n`.length;
    }
    if (m.subject.endsWith(".run")) {
      runs++;
      largest = Math.max(largest, total);
      if (total >= RUNS_SHARE)
        late.push(`seq ${m.seq} at ${m.time.toISOString()} on ${total} bytes`);
    }
    order += m.subject.endsWith(".run") ? "r" : m.subject.endsWith(".job") ? "d" : "o";
    total += 22 + m.subject.length + 4 + header + m.data.length + 8;
  }
  // The walk counts what the server counts.
  expect(total).toBe(info.state.bytes);
  return { runs, largest, order, late };
}
