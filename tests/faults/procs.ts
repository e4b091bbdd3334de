import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { Subprocess } from "bun";
import { SERVICE_NAMES, type ServiceName } from "../../services/runtime/run.ts";
import { hashToken } from "../../shared/auth/index.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";

// Real processes for the fault tests and the soak script: `bun services/cli/main.ts serve <svc>`
// (or `up`), each with a temp config file, SWITCHYARD_CONFIG and NATS_URL, killed with SIGKILL
// and started again. Nothing here talks to anything but 127.0.0.1.

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");

export const FAULT_CLIENT = {
  id: "ops",
  token: "ops-token-0123456789abcdef0123",
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
} as const;

export interface FaultYamlOptions {
  readonly natsUrl: string;
  /** Extra route entries (YAML list items, indented by two spaces). */
  readonly routes?: string;
  /** Keys merged into `nats`. */
  readonly nats?: Record<string, unknown>;
  /** Keys merged into `callbacks`. */
  readonly callbacks?: Record<string, unknown>;
  readonly logLevel?: string;
  /** Top-level YAML appended after the routes (e.g. an `index:` section). */
  readonly extra?: string;
  /** The client's `runs_per_minute` (default: high enough never to matter). */
  readonly runsPerMinute?: number;
}

/**
 * The config of the fault tests: one client `ops` (callback secret, generous rate limit), builtin
 * routes `f.echo` and `f.sleep`, callbacks allowed to 127.0.0.1 with a short schedule, and every
 * listener on port 0.
 */
export function faultYaml(options: FaultYamlOptions): string {
  const callbacks = {
    allow_cidrs: ["127.0.0.1/32"],
    retry_schedule: ["200ms", "500ms", "1s", "1s", "1s", "1s", "1s", "1s"],
    jitter: 0,
    timeout: "2s",
    ...options.callbacks,
  };
  return `
server: { host: 127.0.0.1, port: 0 }
monitoring: { host: 127.0.0.1, port: 0 }
nats: ${JSON.stringify({ url: options.natsUrl, duplicate_window: "2m", publish_timeout: "2s", ...options.nats })}
log: { level: ${options.logLevel ?? "info"} }
callbacks: ${JSON.stringify(callbacks)}
clients:
  - id: ${FAULT_CLIENT.id}
    token_sha256: ["${hashToken(FAULT_CLIENT.token)}"]
    routes: ["f.*"]
    runs_per_minute: ${options.runsPerMinute ?? 100_000_000}
    callback_secrets: ["${FAULT_CLIENT.secret}"]
routes:
  - key: f.echo
    deadline: 10m
    executor: { kind: builtin, name: echo }
  - key: f.sleep
    deadline: 10m
    executor: { kind: builtin, name: sleep, sleep_ms: 100 }
${options.routes ?? ""}
${options.extra ?? ""}`;
}

/**
 * A service, `up`, `read-models` (`serve projector indexer`, as Kubernetes deploys the read
 * models), or a further replica of a service: `projector#2`.
 */
export type ProcName = ServiceName | "up" | "read-models" | `${ServiceName}#${number}`;

/** The processes of the hub as Kubernetes deploys it (deploy/k8s/base). */
export const DEPLOYED_PROCS = ["ingress", "read-models", "executor", "callback"] as const;

type ProcKind = ServiceName | "up" | "read-models";
const kindOf = (name: ProcName) => name.split("#")[0] as ProcKind;
const READ_MODELS: readonly ServiceName[] = ["projector", "indexer"];
const argsOf = (kind: ProcKind) =>
  kind === "up" ? ["up"] : ["serve", ...(kind === "read-models" ? READ_MODELS : [kind])];

interface ProcState {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  out: string;
  starts: number;
}

export interface HubProcs extends AsyncDisposable {
  readonly dir: string;
  readonly configPath: string;
  /** The ingress base URL of the latest ingress (or `up`) process; it changes on restart (port 0). */
  url(): string;
  /** The base URL of one ingress replica (`ingress`, `ingress#2`, …), as it last started. */
  urlOf(name: ProcName): string;
  /** Starts a service process; resolves once it logged that it is ready. */
  start(name: ProcName): Promise<void>;
  /** SIGKILL (or `signal`, e.g. SIGTERM for a graceful stop) and wait for the exit. */
  kill(name: ProcName, signal?: "SIGKILL" | "SIGTERM"): Promise<void>;
  restart(name: ProcName): Promise<void>;
  /** Rewrites the config file (read by processes started afterwards). */
  writeConfig(yaml: string): Promise<void>;
  pid(name: ProcName): number | undefined;
  running(name: ProcName): boolean;
  /** Everything the process (all its incarnations) wrote. */
  output(name: ProcName): string;
  /** Kills every process and removes the temp dir. */
  stop(): Promise<void>;
}

/** A line each service logs once it is serving (the ingress logs its URL). */
const READY_LINE: Record<ServiceName | "up", RegExp> = {
  ingress: /"url":"(http:[^"]+)"/,
  up: /"url":"(http:[^"]+)"/,
  projector: /"msg":"projector (?:started|standing by)"/,
  indexer: /"msg":"indexer (?:started|standing by)"|nothing to do/,
  executor: /"msg":"executor service started"/,
  callback: /"msg":"callback service started"/,
};

/** The ready line of a process; read-models is ready once both its read models are. */
function readyMatch(kind: ProcKind, output: string): RegExpExecArray | null {
  if (kind !== "read-models") return READY_LINE[kind].exec(output);
  const lines = READ_MODELS.map((service) => READY_LINE[service].exec(output));
  return lines.every((line) => line !== null) ? (lines[0] as RegExpExecArray) : null;
}

/** Starts nothing yet: a temp dir with the config file, and a registry of service processes. */
export async function hubProcs(yaml: string, natsUrl: string): Promise<HubProcs> {
  const dir = await mkdtemp(join(tmpdir(), "switchyard-faults-"));
  const configPath = join(dir, "switchyard.yaml");
  await writeFile(configPath, yaml);
  const procs = new Map<ProcName, ProcState>();
  const urls = new Map<ProcName, string>();
  let url = "";

  const pump = async (stream: ReadableStream<Uint8Array>, state: ProcState) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) state.out += decoder.decode(chunk, { stream: true });
  };

  const kill = async (name: ProcName, signal: "SIGKILL" | "SIGTERM" = "SIGKILL") => {
    const state = procs.get(name);
    if (!state) return;
    if (state.proc.exitCode === null && state.proc.signalCode === null) state.proc.kill(signal);
    await state.proc.exited;
  };

  const start = async (name: ProcName) => {
    const previous = procs.get(name);
    if (previous && previous.proc.exitCode === null && previous.proc.signalCode === null) {
      throw new Error(`${name} is still running; kill it first`);
    }
    const kind = kindOf(name);
    const proc = Bun.spawn([process.execPath, MAIN, ...argsOf(kind)], {
      cwd: dir,
      env: {
        ...process.env,
        SWITCHYARD_CONFIG: configPath,
        NATS_URL: natsUrl,
        SWITCHYARD_LOG_LEVEL: process.env.FAULTS_LOG_LEVEL ?? "info",
      },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const state: ProcState = {
      proc,
      out: previous ? `${previous.out}\n--- restarted\n` : "",
      starts: (previous?.starts ?? 0) + 1,
    };
    const offset = state.out.length;
    procs.set(name, state);
    void pump(proc.stdout, state);
    void pump(proc.stderr, state);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const fresh = state.out.slice(offset);
      const match = readyMatch(kind, fresh);
      if (match) {
        if (match[1]) {
          url = match[1];
          urls.set(name, match[1]);
        }
        return;
      }
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`${name} exited before it was ready:\n${fresh.slice(-2000)}`);
      }
      if (Date.now() > deadline) {
        await kill(name);
        throw new Error(`${name} not ready after 30 s:\n${fresh.slice(-2000)}`);
      }
      await Bun.sleep(25);
    }
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await Promise.all([...procs.keys()].map((name) => kill(name)));
    await rm(dir, { recursive: true, force: true });
  };

  return {
    dir,
    configPath,
    url: () => url,
    urlOf: (name) => urls.get(name) ?? "",
    start,
    kill,
    async restart(name) {
      await kill(name);
      await start(name);
    },
    writeConfig: (text) => writeFile(configPath, text),
    pid: (name) => procs.get(name)?.proc.pid,
    running: (name) => {
      const p = procs.get(name)?.proc;
      return p !== undefined && p.exitCode === null && p.signalCode === null;
    },
    output: (name) => procs.get(name)?.out ?? "",
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** Starts the five services as separate processes (ingress last, so its URL is set when this returns). */
export async function startAllServices(procs: HubProcs): Promise<void> {
  await Promise.all(SERVICE_NAMES.filter((s) => s !== "ingress").map((s) => procs.start(s)));
  await procs.start("ingress");
}

/** Starts the hub's processes as Kubernetes deploys them (DEPLOYED_PROCS), ingress last. */
export async function startDeployedProcs(procs: HubProcs): Promise<void> {
  await Promise.all(DEPLOYED_PROCS.filter((p) => p !== "ingress").map((p) => procs.start(p)));
  await procs.start("ingress");
}

/** Resident set size of a process in bytes, from /proc/<pid>/status (VmRSS). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
  if (!kb) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kb) * 1024;
}

/** Messages per subject of the events stream under `filter` (e.g. "sy.evt.ops.*.job"). */
export async function subjectCounts(
  jsm: JetStreamManager,
  filter: string,
): Promise<Record<string, number>> {
  const info = await jsm.streams.info(TOPOLOGY.eventsStream, { subjects_filter: filter });
  return info.state.subjects ?? {};
}

export interface SubmitResult {
  readonly status: number;
  readonly jobId?: string;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

/** POST /run as the fault client. Network errors come back as status 0. */
export async function submitRun(
  base: string,
  body: Record<string, unknown>,
  timeoutMs = 10_000,
): Promise<SubmitResult> {
  try {
    const res = await fetch(`${base}/run`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${FAULT_CLIENT.token}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    const jobId = typeof json.job_id === "string" ? json.job_id : undefined;
    return { status: res.status, body: json, headers: res.headers, ...(jobId ? { jobId } : {}) };
  } catch {
    return { status: 0, body: {}, headers: new Headers() };
  }
}

/** GET /jobs/{id} as the fault client; status 0 on a network error. */
export async function getJob(
  base: string,
  jobId: string,
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  try {
    const res = await fetch(`${base}/jobs/${jobId}`, {
      headers: { authorization: `Bearer ${FAULT_CLIENT.token}` },
      signal: AbortSignal.timeout(10_000),
    });
    return {
      status: res.status,
      body: (await res.json().catch(() => ({}))) as Record<string, unknown>,
      headers: res.headers,
    };
  } catch {
    return { status: 0, body: {}, headers: new Headers() };
  }
}

/** Runs `task` over `items` with at most `concurrency` at once. */
export async function pool<T>(
  items: readonly T[],
  concurrency: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        await task(item);
      }
    }),
  );
}
