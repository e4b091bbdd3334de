import type { TestHub } from "./hub.ts";

/** One sample line of the Prometheus text format. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A metric family: its TYPE and the samples that belong to it (histogram series included). */
export interface Family {
  readonly type: string;
  readonly samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
const SUFFIXES = ["_bucket", "_sum", "_count"];

/** Parses the text exposition format into families by name. */
export function parseMetrics(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const familyOf = (sample: string): Family | undefined => {
    const exact = families.get(sample);
    if (exact) return exact;
    for (const suffix of SUFFIXES) {
      if (!sample.endsWith(suffix)) continue;
      const family = families.get(sample.slice(0, -suffix.length));
      if (family && (family.type === "histogram" || family.type === "summary")) return family;
    }
    return undefined;
  };
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      families.set(type[1] as string, { type: type[2] as string, samples: [] });
      continue;
    }
    if (line.startsWith("#") || line.trim() === "") continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(LABEL))
      labels[key as string] = value ?? "";
    const family = familyOf(match[1] as string);
    if (!family) throw new Error(`sample ${match[1]} has no # TYPE line`);
    family.samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return families;
}

/** The value of the one sample with these labels (and any others), or undefined. */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const family = families.get(name.replace(/_(bucket|sum|count)$/, "")) ?? families.get(name);
  const sample = family?.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return sample?.value;
}

/** Where a test hub serves /metrics: its monitoring server. */
export function metricsUrl(hub: TestHub): string {
  return `${hub.running.monitoring.url}/metrics`;
}

/** GET /metrics of a test hub, parsed. */
export async function scrapeHub(
  hub: TestHub,
): Promise<{ text: string; families: Map<string, Family> }> {
  const res = await fetch(metricsUrl(hub));
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  return { text, families: parseMetrics(text) };
}
