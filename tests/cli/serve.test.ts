/**
 * `switchyard serve <service>...` as a real process: several services in one process (the read
 * models, as Kubernetes runs them), one log `service` naming them all, and the same process
 * refusing a name that is no service or one given twice before it touches NATS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { faultYaml } from "../faults/procs.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
let nats: TestNats;
let dir = "";
let configPath = "";

beforeAll(async () => {
  nats = await startNats();
  dir = await mkdtemp(join(tmpdir(), "switchyard-serve-"));
  configPath = join(dir, "switchyard.yaml");
  const index = `index: { sqlite_path: "${join(dir, "index.sqlite")}" }`;
  await writeFile(configPath, faultYaml({ natsUrl: nats.url, extra: index }));
});

afterAll(async () => {
  await nats?.stop();
  await rm(dir, { recursive: true, force: true });
});

/**
 * `switchyard serve <args>` with tracing on through the standard variable only (no span leaves an
 * idle read model, so the endpoint is never called); the test's own OTEL_* are dropped.
 */
function spawnServe(args: readonly string[]) {
  const rest = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith("OTEL_") && key !== "NATS_URL"),
  );
  return Bun.spawn([process.execPath, MAIN, "serve", ...args], {
    cwd: dir,
    env: {
      ...rest,
      SWITCHYARD_CONFIG: configPath,
      SWITCHYARD_LOG_LEVEL: "info",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
}

/** Every JSON line a stream carries, gathered as it arrives. */
function collect(stream: ReadableStream<Uint8Array>): () => string {
  let text = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  })();
  return () => text;
}

describe("switchyard serve with several services", () => {
  test("serve projector indexer: both read models in one process; its log, tracing and metrics name both", async () => {
    const proc = spawnServe(["projector", "indexer"]);
    const out = collect(proc.stdout);
    const err = collect(proc.stderr);
    try {
      const port = await waitFor(
        "both read models started and the monitoring port",
        () => {
          if (proc.exitCode !== null) throw new Error(`serve exited:\n${out()}${err()}`);
          const text = out();
          const started =
            /"msg":"projector started"/.test(text) && /"msg":"indexer started"/.test(text);
          return started
            ? /"port":(\d+),"msg":"monitoring server listening"/.exec(text)?.[1]
            : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 50 },
      );
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toContain('switchyard_service_info{service="projector"} 1');
      expect(metrics).toContain('switchyard_service_info{service="indexer"} 1');
      expect(metrics).not.toContain('switchyard_service_info{service="ingress"}');
      const lines = out()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map(
          (line) => JSON.parse(line) as { service?: string; msg?: string; service_name?: string },
        );
      expect([...new Set(lines.map((line) => line.service))]).toEqual(["projector+indexer"]);
      const tracing = lines.find((line) => line.msg === "tracing to an OTLP endpoint");
      expect(tracing?.service_name).toBe("switchyard-projector+indexer");
    } finally {
      proc.kill("SIGTERM");
    }
    expect(await proc.exited).toBe(0);
  });

  test("a name that is no service, or one given twice: exit 2 naming it, nothing started", async () => {
    const cases: [string[], string][] = [
      [
        ["projector", "indexr"],
        "unknown service 'indexr'; serve takes: ingress, projector, indexer, executor, callback",
      ],
      [["projector", "indexer", "projector"], "service 'projector' is named twice"],
    ];
    for (const [args, message] of cases) {
      const proc = spawnServe(args);
      const [stdout, stderr, code] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ]);
      expect({ args, code, first: stderr.split("\n")[0] }).toEqual({
        args,
        code: 2,
        first: `switchyard: ${message}`,
      });
      expect(stderr).toContain("usage: switchyard serve <service> [<service>...]");
      expect(stdout).toBe(""); // no log line: no service started, no connection made
    }
  });
});
