/**
 * The load generator, run as its own process so it does not share an event loop with what it
 * measures: autocannon at a fixed concurrency for a bounded duration. Prints `RESULT <json>`.
 *
 * Usage: bun bench/load.ts '<LoadSpec as JSON>'
 */
import autocannon, { type AutocannonRequest } from "autocannon";
import { writeResultLine } from "./lib/common.ts";

export interface LoadSpec {
  readonly url: string;
  readonly method: "GET" | "POST";
  readonly token?: string;
  readonly connections: number;
  readonly durationSec: number;
  /** POST body; `[<id>]` is replaced by a fresh UUID per request (autocannon idReplacement). */
  readonly body?: string;
  /** GET paths cycled through one by one (e.g. many /jobs/{id}). */
  readonly paths?: readonly string[];
}

export interface LoadResult {
  readonly ok: number;
  readonly okPerSec: number;
  readonly total: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly statusCodes: Record<string, number>;
  readonly latencyMs: { p50: number; p99: number; max: number; mean: number };
  readonly durationSec: number;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const headers: Record<string, string> = {};
  if (spec.token) headers.authorization = `Bearer ${spec.token}`;
  if (spec.body !== undefined) headers["content-type"] = "application/json";
  let next = 0;
  const paths = spec.paths ?? [];
  const requests: AutocannonRequest[] | undefined =
    paths.length > 0
      ? [
          {
            method: spec.method,
            setupRequest: (req) => {
              req.path = paths[next++ % paths.length] ?? "/";
              return req;
            },
          },
        ]
      : undefined;
  const result = await autocannon({
    url: spec.url,
    method: spec.method,
    connections: spec.connections,
    duration: spec.durationSec,
    pipelining: 1,
    timeout: 10,
    headers,
    ...(spec.body === undefined
      ? {}
      : { body: spec.body, idReplacement: spec.body.includes("[<id>]") }),
    ...(requests ? { requests } : {}),
  });
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count;
  const ok = result["2xx"];
  return {
    ok,
    okPerSec: Math.round(ok / result.duration),
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    latencyMs: {
      p50: result.latency.p50,
      p99: result.latency.p99,
      max: result.latency.max,
      mean: result.latency.average,
    },
    durationSec: result.duration,
  };
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2] ?? "{}") as LoadSpec;
  const result = await runLoad(spec);
  await writeResultLine("RESULT", result);
  process.exit(0);
}
