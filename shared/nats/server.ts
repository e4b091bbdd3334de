import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { delimiter, join } from "node:path";

/** Where a nats-server binary is looked for, in order, after NATS_SERVER_BIN. */
const CANDIDATES = ["/usr/sbin/nats-server", "/usr/local/bin/nats-server", "/usr/bin/nats-server"];

export const NATS_INSTALL_HINT = [
  "No nats-server binary was found.",
  "Install one:   sudo apt-get install nats-server   (Debian/Ubuntu)",
  "           or  download a release from https://github.com/nats-io/nats-server/releases",
  "           and set NATS_SERVER_BIN=/path/to/nats-server",
  "Or point Switchyard at a running server:   NATS_URL=nats://host:4222 npm start",
].join("\n");

export class NatsServerNotFoundError extends Error {
  readonly code = "nats_server_not_found";
  constructor() {
    super(NATS_INSTALL_HINT);
    this.name = "NatsServerNotFoundError";
  }
}

/** The caller's environment; the binary search reads NATS_SERVER_BIN and PATH from it. */
export type NatsServerEnv = Readonly<Record<string, string | undefined>>;

/**
 * Finds a nats-server binary: NATS_SERVER_BIN wins, then the PATH, then the Debian location.
 * Throws {@link NatsServerNotFoundError} with the install hint when there is none.
 */
export function findNatsServerBinary(env: NatsServerEnv): string {
  const explicit = env.NATS_SERVER_BIN;
  if (explicit) {
    if (!existsSync(explicit)) throw new NatsServerNotFoundError();
    return explicit;
  }
  const fromPath = (env.PATH ?? "")
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, "nats-server"));
  for (const candidate of [...fromPath, ...CANDIDATES]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new NatsServerNotFoundError();
}

export interface NatsServerOptions {
  /** Binary path; defaults to {@link findNatsServerBinary} over `env`. */
  readonly binary?: string;
  /** Where NATS_SERVER_BIN and PATH come from (the entry point's environment). */
  readonly env: NatsServerEnv;
  /** Store directory for JetStream. */
  readonly storeDir: string;
  /** Port; 0 or undefined picks a free one (the server chooses and reports it). */
  readonly port?: number;
  readonly host?: string;
  /**
   * The config file (in args, `-c`) enables JetStream with this store_dir itself: no `-js -sd`
   * flags, which nats-server 2.9 would count twice. A file that is reloaded must do so: on a reload
   * 2.9.10 shuts JetStream down when the file does not enable it.
   */
  readonly jetstreamInConfig?: boolean;
  /** Extra command-line arguments (cluster routes, server name, ...). */
  readonly args?: readonly string[];
  /** How long to wait for the server to accept clients. */
  readonly startTimeoutMs?: number;
  /**
   * Tie the server's life to this process (default true): on Linux it is started through
   * `setpriv --pdeathsig TERM`, so the kernel stops it when this process dies, even by SIGKILL.
   */
  readonly dieWithParent?: boolean;
  /**
   * Run the server in a session and process group of its own (setsid), so the signals a terminal
   * sends to its foreground group (Ctrl-C, `timeout`) reach only the process that started it,
   * which stops the server after its own drain. Default false.
   */
  readonly ownProcessGroup?: boolean;
}

/** util-linux's setpriv, which sets the parent-death signal and then execs (same pid). */
function findSetpriv(env: NatsServerEnv): string | undefined {
  if (process.platform !== "linux") return undefined;
  const dirs = [...(env.PATH ?? "").split(delimiter).filter(Boolean), "/usr/bin", "/bin"];
  return dirs.map((dir) => join(dir, "setpriv")).find((path) => existsSync(path));
}

export interface ManagedNatsServer {
  readonly url: string;
  readonly port: number;
  readonly host: string;
  readonly storeDir: string;
  readonly pid: number;
  /** False when nothing ties the server to this process (no setpriv on this system). */
  readonly diesWithParent: boolean;
  /** Everything the server wrote, for diagnostics. */
  output(): string;
  /** SIGTERM (graceful) or SIGKILL, then wait for exit. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
}

/**
 * Starts a nats-server child process with JetStream, bound to loopback by default, and waits until it
 * reports that it accepts client connections. The port is reported back so a restart can reuse it.
 */
export async function startNatsServer(options: NatsServerOptions): Promise<ManagedNatsServer> {
  const binary = options.binary ?? findNatsServerBinary(options.env);
  const host = options.host ?? "127.0.0.1";
  await mkdir(options.storeDir, { recursive: true });
  const args = [
    "-a",
    host,
    "-p",
    String(options.port && options.port > 0 ? options.port : -1),
    ...(options.jetstreamInConfig ? [] : ["-js", "-sd", options.storeDir]),
    ...(options.args ?? []),
  ];
  // Bun spawns from its main thread, which lives as long as the process: the parent-death signal
  // fires exactly when this process ends.
  const setpriv = options.dieWithParent === false ? undefined : findSetpriv(options.env);
  const command = setpriv ? [setpriv, "--pdeathsig", "TERM", binary, ...args] : [binary, ...args];
  // The server's config may reference `$VAR` secrets (deploy/nats/permissions.conf): env feeds them.
  const child = Bun.spawn(command, {
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
    detached: options.ownProcessGroup === true,
    env: { ...options.env },
  });
  let log = "";
  let resolvePort: (port: number) => void = () => {};
  let rejectPort: (err: Error) => void = () => {};
  const portFound = new Promise<number>((resolve, reject) => {
    resolvePort = resolve;
    rejectPort = reject;
  });
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      log += decoder.decode(chunk, { stream: true });
      if (log.length > 200_000) log = log.slice(-100_000);
      const match = /Listening for client connections on [^\s]*:(\d+)/.exec(log);
      if (match?.[1]) resolvePort(Number(match[1]));
    }
  };
  void pump(child.stdout);
  void pump(child.stderr);
  void child.exited.then((code) =>
    rejectPort(new Error(`nats-server exited with code ${code} before it was ready:\n${log}`)),
  );
  const timeoutMs = options.startTimeoutMs ?? 15_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const port = await Promise.race([
    portFound,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`nats-server did not start within ${timeoutMs} ms:\n${log}`)),
        timeoutMs,
      );
    }),
  ]).finally(() => clearTimeout(timer));
  // "Server is ready" follows the listen line once JetStream has recovered its store.
  const readyDeadline = Date.now() + timeoutMs;
  while (!log.includes("Server is ready") && Date.now() < readyDeadline) {
    if (child.exitCode !== null) throw new Error(`nats-server exited:\n${log}`);
    await Bun.sleep(10);
  }
  return {
    url: `nats://${host}:${port}`,
    port,
    host,
    storeDir: options.storeDir,
    pid: child.pid,
    diesWithParent: setpriv !== undefined,
    output: () => log,
    async stop(signal = "SIGTERM") {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const killTimer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await child.exited;
      clearTimeout(killTimer);
    },
  };
}
