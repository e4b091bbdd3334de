/**
 * `bun bench/sizing.ts [results.json]`: the sizing table of docs/deploy.md from a benchmark run's
 * e2e closed loop (default: the newest file in bench/results). The model and its limits are in
 * bench/lib/sizing.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { inputsFromResults, projectorLimit, renderSizing, sizeFor } from "./lib/sizing.ts";

const dir = join(import.meta.dir, "results");
const file =
  process.argv[2] ??
  join(
    dir,
    readdirSync(dir)
      .filter((f) => f.endsWith(".json"))
      .sort()
      .at(-1) ?? "",
  );
const results = JSON.parse(readFileSync(file, "utf8"));
const inputs = inputsFromResults(results, {
  utilisation: 0.6,
  // The manifests' CPU limits: ingress 2 cores, the others 1.
  coresPerPod: { ingress: 2, executor: 1, callback: 1, projector: 1 },
});
const us = Object.entries(inputs.cpuUsPerJob)
  .map(([name, value]) => `${name} ${Math.round(value)}`)
  .join(", ");
process.stdout.write(`inputs (${file}): CPU µs per job: ${us}; utilisation 0.6\n`);
process.stdout.write(`one active projector: about ${projectorLimit(inputs)} jobs/s\n\n`);
process.stdout.write(`${renderSizing([1_000, 10_000, 50_000].map((r) => sizeFor(r, inputs)))}\n`);
