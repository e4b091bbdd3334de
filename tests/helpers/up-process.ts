import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "./wait.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");

/** A `switchyard up` process of a test, in a folder of its own with its config file. */
export interface UpProcess extends AsyncDisposable {
  readonly proc: ReturnType<typeof Bun.spawn>;
  readonly dir: string;
  readonly configFile: string;
  /** Everything it printed on stdout so far. */
  out(): string;
  /** Its JSON log lines so far. */
  logLines(): Record<string, unknown>[];
  /** Waits for "ingress listening"; the API's base URL. */
  listening(): Promise<string>;
  /**
   * Sends a signal to its whole process group, as a terminal's Ctrl-C or `timeout` does; only
   * with `ownProcessGroup`.
   */
  signalGroup(signal: "SIGINT" | "SIGTERM"): void;
  /** SIGTERM (SIGKILL after 10 s), then the folder is removed. */
  stop(): Promise<void>;
}

export interface UpOptions {
  /** The NATS it uses; undefined: `up` starts its embedded nats-server in ./.data. */
  readonly natsUrl?: string;
  /** The switchyard.yaml it starts with. */
  readonly yaml: string;
  /** The temporary folder's name prefix. */
  readonly prefix?: string;
  /** Leads a process group of its own (setsid), as a shell's foreground job does. */
  readonly ownProcessGroup?: boolean;
}

/** Starts `switchyard up` against the given NATS with the given configuration. */
export async function startUp(options: UpOptions): Promise<UpProcess> {
  const dir = await mkdtemp(join(tmpdir(), options.prefix ?? "switchyard-up-"));
  const configFile = join(dir, "switchyard.yaml");
  await writeFile(configFile, options.yaml);
  const proc = Bun.spawn([process.execPath, MAIN, "up"], {
    cwd: dir,
    env: {
      ...process.env,
      SWITCHYARD_CONFIG: configFile,
      NATS_URL: options.natsUrl ?? "",
      SWITCHYARD_LOG_LEVEL: "info",
    },
    stdout: "pipe",
    stderr: "pipe",
    detached: options.ownProcessGroup === true,
  });
  let out = "";
  void (async () => {
    for await (const chunk of proc.stdout) out += new TextDecoder().decode(chunk);
  })();
  const logLines = () =>
    out
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      await proc.exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  return {
    proc,
    dir,
    configFile,
    out: () => out,
    logLines,
    async listening() {
      const line = await waitFor(
        "the ingress to listen",
        () => logLines().find((l) => l.msg === "ingress listening"),
        { timeoutMs: 20_000 },
      );
      return String(line.url);
    },
    signalGroup(signal) {
      if (options.ownProcessGroup !== true) throw new Error("not in a process group of its own");
      process.kill(-proc.pid, signal);
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
