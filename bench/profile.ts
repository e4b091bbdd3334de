/**
 * Summarises a .cpuprofile (from `bun --cpu-prof`, e.g. BENCH_PROFILE=ingress npm run bench) by
 * sample counts: self and inclusive share per function. Counting samples rather than summing time
 * deltas keeps idle gaps (one sample spanning seconds of sleep) from dominating the picture.
 *
 * Usage: bun bench/profile.ts <file.cpuprofile> [top=40] [filter]
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg, filter] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: bun bench/profile.ts <file.cpuprofile> [top] [filter]\n");
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
const top = Number(topArg ?? 40);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const label = (n: ProfileNode) => {
  const url = n.callFrame.url
    .replace(/^.*\/node_modules\//, "nm:")
    .replace(/^.*\/work\/main\//, "");
  return `${n.callFrame.functionName || "(anonymous)"} ${url}:${n.callFrame.lineNumber + 1}`;
};
const idle = new Set(["(idle)", "(program)", "(garbage collector)"]);
const self = new Map<string, number>();
const total = new Map<string, number>();
let counted = 0;
for (const id of profile.samples) {
  const node = byId.get(id);
  if (!node || idle.has(node.callFrame.functionName)) continue;
  counted++;
  const l = label(node);
  self.set(l, (self.get(l) ?? 0) + 1);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const n = byId.get(cur);
    if (!n) break;
    const nl = label(n);
    if (seen.has(nl)) continue;
    seen.add(nl);
    total.set(nl, (total.get(nl) ?? 0) + 1);
  }
}
const pct = (v: number) => `${((100 * v) / counted).toFixed(1).padStart(5)}%`;
const show = (title: string, map: Map<string, number>) => {
  process.stdout.write(`\n${title} (${counted} busy samples)\n`);
  [...map]
    .filter(([l]) => !filter || l.includes(filter))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .forEach(([l, v]) => void process.stdout.write(`${pct(v)}  ${l}\n`));
};
show("self", self);
show("inclusive", total);
