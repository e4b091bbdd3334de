import { describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ALLOCATOR_ENV } from "../../bench/lib/allocator-env.ts";
import { hashToken } from "../../shared/auth/index.ts";
import { startNats } from "../helpers/nats.ts";
import { startOtlpReceiver } from "../helpers/otlp.ts";
import { waitFor } from "../helpers/wait.ts";

const ROOT = join(import.meta.dir, "../..");
const TOKEN = "binary-test-token-0123456789";

/** Starts the compiled binary with a service and collects its JSON log lines. */
function serve(
  binary: string,
  service: string,
  where: {
    readonly configPath: string;
    readonly cwd: string;
    readonly env?: Record<string, string>;
  },
) {
  const { configPath, cwd } = where;
  const proc = Bun.spawn([binary, "serve", service], {
    cwd,
    // The image's allocator settings: the compiled binary starts with them.
    env: {
      PATH: "/usr/bin:/bin",
      SWITCHYARD_CONFIG: configPath,
      TMPDIR: cwd,
      ...ALLOCATOR_ENV,
      ...where.env,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = { text: "" };
  void (async () => {
    for await (const chunk of proc.stdout) out.text += new TextDecoder().decode(chunk);
  })();
  return { proc, out };
}

describe("the self-contained binary (bun build --compile), as the image runs it", () => {
  test("builds, serves ingress/projector/executor against nats-server, answers /healthz and POST /run", async () => {
    const dir = await mkdtemp(join(tmpdir(), "switchyard-bin-"));
    await using nats = await startNats();
    await using otlp = startOtlpReceiver();
    const binary = join(dir, "switchyard");
    const build = Bun.spawnSync(
      [
        process.execPath,
        "build",
        "--compile",
        join(ROOT, "services/cli/main.ts"),
        "--outfile",
        binary,
      ],
      { cwd: ROOT, stderr: "pipe" },
    );
    expect(build.exitCode).toBe(0);
    const config = join(dir, "switchyard.yaml");
    await Bun.write(
      config,
      `server: { host: 127.0.0.1, port: 0 }
monitoring: { host: 127.0.0.1, port: 0 }
nats: { url: "${nats.url}" }
log: { level: info }
clients:
  - id: acme
    token_sha256: ["${hashToken(TOKEN)}"]
    routes: ["demo.*"]
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
`,
    );
    // The binary must not need the repository: run it from an empty directory.
    // The ingress traces (the SDK is loaded on demand, so the binary must carry it).
    const tracing = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_BSP_SCHEDULE_DELAY: "100" };
    const services = ["ingress", "projector", "executor"].map((s) =>
      serve(binary, s, {
        configPath: config,
        cwd: dir,
        ...(s === "ingress" ? { env: tracing } : {}),
      }),
    );
    try {
      const [ingress, projector] = services as [ReturnType<typeof serve>, ReturnType<typeof serve>];
      const base = await waitFor(
        "the ingress URL in its log",
        () => /"url":"(http:[^"]+)"/.exec(ingress.out.text)?.[1],
        {
          timeoutMs: 20_000,
        },
      );
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const monitoringPort = await waitFor(
        "the projector monitoring port",
        () => /"port":(\d+),"msg":"monitoring server listening"/.exec(projector.out.text)?.[1],
      );
      expect((await fetch(`http://127.0.0.1:${monitoringPort}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${monitoringPort}/readyz`)).status).toBe(200);
      expect(await (await fetch(`http://127.0.0.1:${monitoringPort}/metrics`)).text()).toContain(
        "switchyard_",
      );
      const res = await fetch(`${base}/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ request_id: "bin-1", route: "demo.echo", input: "from the binary" }),
      });
      expect(res.status).toBe(202);
      const { job_id } = (await res.json()) as { job_id: string };
      await waitFor("the job to be done", async () => {
        const r = await fetch(`${base}/jobs/${job_id}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        return ((await r.json()) as { status: string }).status === "done";
      });
      for (const s of services) s.proc.kill("SIGTERM");
      const codes = await Promise.all(services.map((s) => s.proc.exited));
      // On failure, show what the services said while stopping.
      const said = services.map((s) => s.out.text.split("\n").slice(-5).join("\n")).join("\n---\n");
      expect({ codes, said: codes.every((c) => c === 0) ? "" : said }).toEqual({
        codes: [0, 0, 0],
        said: "",
      });
      const accept = otlp.spans().find((span) => span.name === "POST /run");
      expect(accept?.service).toBe("switchyard-ingress");
      expect(accept?.attributes.job_id).toBe(job_id);
    } finally {
      for (const s of services) s.proc.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    }
  });
});
