/**
 * Compiler benchmark (not a test): compiles GitHub's REST description (@octokit/openapi,
 * ~1,200 operations) and prints wall time and peak RSS. Targets: under 2 s, under 500 MB.
 * Run: npx bun bench/compiler.ts [--runs N]
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compile, serializeResult, toolSetStats } from "../shared/tools/index.ts";
import type { Json } from "../shared/tools/schema-merge.ts";

const runsArg = process.argv.indexOf("--runs");
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 5;
const file = join(
  import.meta.dir,
  "..",
  "node_modules/@octokit/openapi/generated/api.github.com.json",
);

const t0 = performance.now();
const text = readFileSync(file, "utf8");
const doc = JSON.parse(text) as Json;
const parseMs = performance.now() - t0;

const times: number[] = [];
let output = "";
let tools = 0;
for (let i = 0; i < runs; i++) {
  const start = performance.now();
  // Each run compiles from a fresh copy of nothing cached: compile() keeps no state between calls.
  const result = compile([{ kind: "openapi", label: "api.github.com.json", doc }]);
  output = serializeResult(result);
  times.push(performance.now() - start);
  tools = result.tools.length;
}
const firstMs = times[0] ?? 0;
const sorted = [...times].sort((a, b) => a - b);
const medianMs = sorted[Math.floor(sorted.length / 2)] ?? 0;
// maxRSS is reported in kilobytes on Linux.
const peakRssMb = process.resourceUsage().maxRSS / 1024;
const stats = toolSetStats(JSON.parse(output).tools);

console.log(`input: ${(text.length / 1e6).toFixed(1)} MB, parsed in ${parseMs.toFixed(0)} ms`);
console.log(
  `tools: ${tools}, output ${(output.length / 1e6).toFixed(1)} MB, estimated tokens ${stats.estimatedTokens}`,
);
console.log(`compile (first run, cold JIT): ${firstMs.toFixed(0)} ms`);
console.log(`compile (median of ${runs}, incl. serialisation): ${medianMs.toFixed(0)} ms`);
console.log(`peak RSS (whole process, incl. the parsed 13 MB input): ${peakRssMb.toFixed(0)} MB`);
console.log(
  `targets: time < 2000 ms ${firstMs < 2000 ? "OK" : "MISSED"}, RSS < 500 MB ${peakRssMb < 500 ? "OK" : "MISSED"}`,
);
