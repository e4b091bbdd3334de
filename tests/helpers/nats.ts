import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConnectionOptions, connect, type NatsConnection } from "@nats-io/transport-node";
import { type ManagedNatsServer, startNatsServer } from "../../shared/nats/index.ts";
import { restartablePort } from "./ports.ts";
import { waitFor } from "./wait.ts";

export interface TestNats extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** A connection owned by the helper; closed by stop(). */
  readonly nc: NatsConnection;
  readonly server: () => ManagedNatsServer;
  /** Stops the server (SIGTERM by default) and keeps the store, for restart(). */
  kill(signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
  /** Starts the server again on the same port with the same store. */
  restart(): Promise<void>;
  /** Stops the server and removes the temporary store. */
  stop(): Promise<void>;
}

export interface StartNatsOptions {
  readonly args?: readonly string[];
  /** The helper connection's identity when the server requires one (user, tls, …). */
  readonly connect?: Partial<ConnectionOptions>;
  /**
   * The store directory (removed by stop()); default a new temporary one. With jetstreamInConfig
   * the config file (args `-c`) names it and enables JetStream (a file that is reloaded must).
   */
  readonly storeDir?: string;
  readonly jetstreamInConfig?: boolean;
  /** The server's environment (secrets its config references as `$VAR`); default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Starts a private nats-server with JetStream on a random loopback port and a temporary store
 * directory. Never uses the machine's shared server on 4222. Use with `await using`.
 */
export async function startNats(options: StartNatsOptions = {}): Promise<TestNats> {
  const storeDir = options.storeDir ?? (await mkdtemp(join(tmpdir(), "switchyard-nats-")));
  const env = options.env ?? process.env;
  const jetstreamInConfig = options.jetstreamInConfig ?? false;
  let server = await startNatsServer({
    storeDir,
    // A restart reuses the port: one outside the ephemeral range stays free while it is down.
    port: await restartablePort(),
    args: options.args ?? [],
    env,
    jetstreamInConfig,
  });
  const port = server.port;
  const nc = await connect({
    servers: server.url,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
    name: "test-helper",
    ...options.connect,
  });
  let reconnects = 0;
  void (async () => {
    for await (const status of nc.status()) if (status.type === "reconnect") reconnects++;
  })();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await nc.close().catch(() => {});
    await server.stop("SIGKILL");
    await rm(storeDir, { recursive: true, force: true });
  };
  return {
    url: server.url,
    port,
    storeDir,
    nc,
    server: () => server,
    kill: (signal = "SIGTERM") => server.stop(signal),
    async restart() {
      const before = reconnects;
      server = await startNatsServer({
        storeDir,
        port,
        args: options.args ?? [],
        env,
        jetstreamInConfig,
      });
      // Requests written before the client notices the old socket died are lost; wait for the
      // helper's own connection to come back so tests start from a known state.
      await waitFor("the helper connection to reconnect", () => reconnects > before, {
        timeoutMs: 15_000,
      });
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
