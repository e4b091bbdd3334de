/**
 * `bun bench/sizing.ts [results.json] [--retention 30d]`: the sizing tables of docs/deploy.md,
 * one partition (P = 1) and partitioned. Inputs: bench/sizing-inputs.json (the measured figures
 * the documented tables use, with where they came from), or a benchmark run when a results file is
 * given: a run's e2e closed loop for the P = 1 table, a `BENCH_PARTITIONS` run's largest P for
 * the partitioned one. Retention is the config's nats.events_max_age (default 30d). The models
 * and their limits are in bench/lib/sizing.ts and bench/lib/partition-sizing.ts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseDuration } from "../shared/config/duration.ts";
import {
  DEFAULT_NATS_PLAN,
  type PartitionSizingInputs,
  partitionInputsFromFixture,
  partitionInputsFromRun,
  partitionLimits,
  queueLimit,
  renderPartitionedSizing,
  sizePartitioned,
} from "./lib/partition-sizing.ts";
import {
  DEFAULT_PLAN,
  foldLimit,
  formatBytes,
  inputsFromFixture,
  inputsFromResults,
  renderSizing,
  sizeFor,
} from "./lib/sizing.ts";

const argv = process.argv.slice(2);
const flag = argv.indexOf("--retention");
const retention = flag >= 0 ? argv[flag + 1] : undefined;
const file = argv.find((a, i) => !a.startsWith("--") && (flag < 0 || i !== flag + 1));
let plan = DEFAULT_PLAN;
try {
  if (flag >= 0) plan = { ...plan, retentionSec: parseDuration(retention ?? "") / 1000 };
} catch {
  process.stderr.write(`--retention takes a duration such as 30d or 12h, not '${retention}'\n`);
  process.exit(2);
}
const source = file ?? join(import.meta.dir, "sizing-inputs.json");
const json = JSON.parse(readFileSync(source, "utf8"));
const partitionsRun = Array.isArray(json.partitions);
if (!partitionsRun)
  printSingle(file ? inputsFromResults(json, plan) : inputsFromFixture(json, plan));
if (partitionsRun || !file) {
  const natsPlan = { ...plan, ...DEFAULT_NATS_PLAN };
  printPartitioned(
    partitionsRun
      ? partitionInputsFromRun(json.partitions, natsPlan)
      : partitionInputsFromFixture(json, natsPlan),
  );
}

function printSingle(inputs: ReturnType<typeof inputsFromFixture>) {
  const us = Object.entries(inputs.cpuUsPerJob)
    .map(([name, value]) => `${name} ${Math.round(value)}`)
    .join(", ");
  const stored = inputs.storedBytesPerJob;
  process.stdout.write(
    `inputs (${source}): CPU µs per job: ${us}; stored per job: events ${formatBytes(stored.events)}, view ${formatBytes(stored.views)}; utilisation ${inputs.utilisation}\n`,
  );
  const limit = foldLimit(inputs).toLocaleString("en-US");
  process.stdout.write(`one active read-models process: about ${limit} jobs/s\n\n`);
  const rows = [1_000, 10_000, 50_000].map((r) => sizeFor(r, inputs));
  process.stdout.write(`${renderSizing(rows, inputs.retentionSec)}\n\n`);
}

function printPartitioned(inputs: PartitionSizingInputs) {
  const us = (r: Readonly<Record<string, number>>) =>
    Object.entries(r)
      .map(([name, value]) => `${name} ${Math.round(value)}`)
      .join(", ");
  process.stdout.write(
    `partitioned: CPU µs per job: ${us(inputs.cpuUsPerJob)}; nats-server µs per job by stream: ${us(inputs.nats.usPerJob)}, per operation ${inputs.nats.usPerOp.toFixed(1)}\n`,
  );
  for (const l of [...partitionLimits(inputs), queueLimit(inputs)]) {
    process.stdout.write(`${l.what}: about ${l.jobsPerSec.toLocaleString("en-US")} jobs/s\n`);
  }
  const rows = [10_000, 50_000, 100_000].map((r) => sizePartitioned(r, inputs));
  process.stdout.write(`\n${renderPartitionedSizing(rows, formatBytes, inputs.retentionSec)}\n`);
}
