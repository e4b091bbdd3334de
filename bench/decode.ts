#!/usr/bin/env bun
/**
 * What reading an event costs a consumer, per event: `bun bench/decode.ts`.
 *
 * For the three events of a job on the common path (run.requested, job.done, callback.delivered,
 * shaped as the hub writes them for a builtin echo with a callback), in one process and with no
 * I/O, the µs per event of:
 *   - parse:   the bytes to a value (TextDecoder + JSON.parse), the floor of any reader;
 *   - decode:  `decodeEvent`, what every consumer runs on every delivery;
 *   - checked: parse + `checkEvent`, the full TypeBox check of the event union;
 *   - check:   `checkEvent` alone, on a value parsed beforehand (nothing allocated, so the
 *              garbage collector does not blur it: checked − parse is noisy for large events).
 * Then the decodes one job costs across the hub's processes (events × consumers that decode
 * them, from the lean event path in docs/architecture.md) and what they weigh against the hub's
 * CPU per job in the e2e closed loop (DECODE_HUB_US, default 800 µs).
 *
 * A micro-benchmark: the figures are a floor (warm caches, one shape at a time); a service pays
 * somewhat more per event. Env: DECODE_ITERATIONS (per round, default 20000), DECODE_ROUNDS
 * (default 21; the median is reported), DECODE_INPUT_BYTES (the run's input, default 1024),
 * DECODE_HUB_US.
 */
import { checkEvent, decodeEvent, encodeEvent } from "../shared/bus/index.ts";
import type { JobEvent } from "../shared/domain/index.ts";
import { round } from "./lib/common.ts";
import { commonPathEvents } from "./lib/job-events.ts";

const env = process.env;
const ITERATIONS = Number(env.DECODE_ITERATIONS ?? 20_000);
const ROUNDS = Number(env.DECODE_ROUNDS ?? 21);
const INPUT_BYTES = Number(env.DECODE_INPUT_BYTES ?? 1024);
const HUB_US_PER_JOB = Number(env.DECODE_HUB_US ?? 800);

/** A JSON document as text, as tool calls send their arguments. */
const input = JSON.stringify({
  query: "x".repeat(Math.max(0, INPUT_BYTES - 40)),
  limit: 20,
});
/** The common path's events of one job, as the ingress, the executor and the callback write them. */
const EVENTS = commonPathEvents({
  jobId: "job_Q2hhbmdlIGlzIGdvb2Qx",
  clientId: "bench",
  input,
  at: "2026-11-26T16:00:00.000Z",
  idSuffix: "AAAAAAAAAAAAAAAAAAAAA",
});

/**
 * Consumers that decode each event of a job on the common path (docs/architecture.md, "The lean
 * event path"): every delivery is decoded once; the callback service skips non-final `.job`
 * events on their header, and there are none on this path.
 */
const DECODERS: Record<string, readonly string[]> = {
  "run.requested": ["executor", "projector", "indexer"],
  "job.done": ["projector", "indexer", "callback"],
  "callback.delivered": ["projector", "indexer"],
};

const decoder = new TextDecoder();
/** One event as a reader gets it: its stored bytes, and the value they parse to. */
interface Sample {
  readonly bytes: Uint8Array;
  readonly value: unknown;
}
const readers = {
  parse: (s: Sample) => JSON.parse(decoder.decode(s.bytes)) as JobEvent,
  decode: (s: Sample) => decodeEvent(s.bytes),
  checked: (s: Sample) => checkEvent(JSON.parse(decoder.decode(s.bytes))),
  // The check on a value parsed beforehand: no allocation, so no garbage collection in the loop.
  check: (s: Sample) => checkEvent(s.value),
};
type Reader = keyof typeof readers;

/** CPU µs (user + system, the whole process: the garbage collector's threads too) so far. */
function cpuUs(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** µs of CPU per call of one reader over one event's bytes, for one round. */
function timeRound(read: (sample: Sample) => JobEvent, sample: Sample): number {
  let sink = 0;
  const started = cpuUs();
  for (let i = 0; i < ITERATIONS; i++) sink += read(sample).id.length;
  if (sink === 0) throw new Error("nothing was read");
  return (cpuUs() - started) / ITERATIONS;
}

const names = Object.keys(readers) as Reader[];
const encoded = EVENTS.map((event) => {
  const bytes = encodeEvent(event);
  return { type: event.type, sample: { bytes, value: JSON.parse(decoder.decode(bytes)) } };
});
const samples = new Map<string, Record<Reader, number[]>>(
  encoded.map((e) => [e.type, { parse: [], decode: [], checked: [], check: [] }]),
);
// Rounds interleave events and readers (the readers' order rotates), so a machine that is busier
// for a while weighs on each alike; the first round warms the JIT and is not counted.
for (let r = 0; r <= ROUNDS; r++) {
  for (const { type, sample } of encoded) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + r) % names.length] as Reader;
      const us = timeRound(readers[name], sample);
      if (r > 0) samples.get(type)?.[name].push(us);
    }
  }
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

const perEvent = new Map<string, Record<Reader, number>>();
for (const { type, sample } of encoded) {
  const s = samples.get(type) as Record<Reader, number[]>;
  const figures = {
    parse: median(s.parse),
    decode: median(s.decode),
    checked: median(s.checked),
    check: median(s.check),
  };
  perEvent.set(type, figures);
  console.log(
    JSON.stringify({
      event: type,
      bytes: sample.bytes.length,
      parse_us: round(figures.parse, 2),
      decode_us: round(figures.decode, 2),
      checked_us: round(figures.checked, 2),
      check_us: round(figures.check, 2),
    }),
  );
}

let decodes = 0;
const perJob = { parse: 0, decode: 0, checked: 0, check: 0 };
for (const [type, consumers] of Object.entries(DECODERS)) {
  const figures = perEvent.get(type);
  if (figures === undefined) continue;
  decodes += consumers.length;
  for (const name of Object.keys(perJob) as Reader[]) {
    perJob[name] += figures[name] * consumers.length;
  }
}
const share = (us: number) => `${round((100 * us) / HUB_US_PER_JOB, 2)}%`;
console.log(
  JSON.stringify({
    decodes_per_job: decodes,
    per_job_us: {
      parse: round(perJob.parse, 1),
      decode: round(perJob.decode, 1),
      checked: round(perJob.checked, 1),
      check: round(perJob.check, 1),
    },
    share_of_hub_cpu_per_job: {
      hub_us: HUB_US_PER_JOB,
      decode: share(perJob.decode),
      check: share(perJob.check),
    },
  }),
);
