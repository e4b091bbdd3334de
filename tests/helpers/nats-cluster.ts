import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ManagedNatsServer, startNatsServer } from "../../shared/nats/index.ts";
import { restartablePort } from "./ports.ts";
import { waitFor } from "./wait.ts";

/** What a node's monitoring endpoint (/jsz) says about the JetStream meta group. */
export interface MetaClusterInfo {
  readonly name?: string;
  readonly leader?: string;
  readonly cluster_size?: number;
  readonly replicas?: readonly { name: string; current: boolean; offline?: boolean }[];
}

/** The part of /jsz?streams=true that the tests read: this node's own copy of each stream. */
export interface JszInfo {
  readonly server_id: string;
  readonly meta_cluster?: MetaClusterInfo;
  readonly account_details?: readonly {
    readonly name: string;
    readonly stream_detail?: readonly {
      readonly name: string;
      readonly cluster?: { leader?: string };
      readonly state: { messages: number; first_seq: number; last_seq: number };
    }[];
  }[];
}

export interface NatsClusterNode {
  /** Server name: n1, n2, n3 ... (nodes[0] is n1). */
  readonly name: string;
  readonly url: string;
  readonly clientPort: number;
  readonly clusterPort: number;
  readonly monitorPort: number;
  readonly storeDir: string;
  /** True between a successful start and a kill. */
  readonly running: boolean;
  /** Everything this node's processes wrote, oldest first (earlier runs included). */
  output(): string;
  /** GET /jsz on this node (streams included). Throws when the node is down. */
  jsz(): Promise<JszInfo>;
}

export interface NatsCluster extends AsyncDisposable {
  /** Client URLs of all nodes, in node order. */
  readonly urls: readonly string[];
  readonly nodes: readonly NatsClusterNode[];
  /** Index (0-based) of the node called `name`, or -1. */
  indexOf(name: string): number;
  /** Stops node i (0-based) with the signal and waits for the process to exit. Keeps its store. */
  kill(i: number, signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
  /** Starts node i again on the same ports and store, and waits until it sees a meta leader. */
  restart(i: number): Promise<void>;
  /** Waits until every running node reports the same JetStream meta leader; returns its name. */
  waitForMetaLeader(timeoutMs?: number): Promise<string>;
  /** Warning and error lines every node has logged so far, prefixed with the node name. */
  problems(): string[];
  /** Kills every node and removes the temporary stores. */
  stop(): Promise<void>;
}

export interface StartNatsClusterOptions {
  /** Number of nodes; 3 unless told. */
  readonly size?: number;
  /** Cluster name; "switchyard-test" unless told. */
  readonly name?: string;
  /** Extra nats-server arguments for every node. */
  readonly args?: readonly string[];
  readonly startTimeoutMs?: number;
}

/** Asks the kernel for a free loopback port (there is a short race until the server binds it). */
/** A free loopback port a node keeps across its restarts (below the ephemeral range). */
export const freePort = restartablePort;

interface NodeState {
  readonly name: string;
  readonly clusterPort: number;
  readonly monitorPort: number;
  readonly storeDir: string;
  clientPort: number;
  server: ManagedNatsServer | undefined;
  /** Output of the processes that have already exited. */
  history: string;
}

/**
 * Starts a cluster of nats-server processes with JetStream on 127.0.0.1: random free client,
 * cluster and monitoring ports, full-mesh routes, one temporary store per node, server names
 * n1..nN. Resolves once a JetStream meta leader exists. Never touches the shared server on 4222.
 * Use with `await using`.
 */
export async function startNatsCluster(
  options: StartNatsClusterOptions = {},
): Promise<NatsCluster> {
  const size = options.size ?? 3;
  if (!Number.isInteger(size) || size < 1)
    throw new Error(`cluster size must be >= 1, got ${size}`);
  const clusterName = options.name ?? "switchyard-test";
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;

  const states: NodeState[] = [];
  const usedPorts = new Set<number>();
  const uniquePort = async () => {
    for (;;) {
      const port = await freePort();
      if (!usedPorts.has(port)) {
        usedPorts.add(port);
        return port;
      }
    }
  };
  for (let i = 0; i < size; i++) {
    states.push({
      name: `n${i + 1}`,
      clusterPort: await uniquePort(),
      monitorPort: await uniquePort(),
      storeDir: await mkdtemp(join(tmpdir(), `switchyard-nats-cluster-n${i + 1}-`)),
      clientPort: 0,
      server: undefined,
      history: "",
    });
  }

  const argsFor = (state: NodeState): string[] => {
    const routes = states
      .filter((other) => other !== state)
      .map((other) => `nats://127.0.0.1:${other.clusterPort}`);
    return [
      "--name",
      state.name,
      "--cluster_name",
      clusterName,
      "--cluster",
      `nats://127.0.0.1:${state.clusterPort}`,
      ...(routes.length > 0 ? ["--routes", routes.join(",")] : []),
      "-m",
      String(state.monitorPort),
      ...(options.args ?? []),
    ];
  };

  const startNode = async (state: NodeState) => {
    const server = await startNatsServer({
      storeDir: state.storeDir,
      port: state.clientPort,
      args: argsFor(state),
      startTimeoutMs,
      env: process.env,
    });
    state.server = server;
    state.clientPort = server.port;
  };

  const jsz = async (state: NodeState): Promise<JszInfo> => {
    if (!state.server) throw new Error(`${state.name} is not running`);
    const res = await fetch(`http://127.0.0.1:${state.monitorPort}/jsz?streams=true`, {
      signal: AbortSignal.timeout(2_000),
    });
    if (!res.ok) throw new Error(`${state.name} /jsz answered ${res.status}`);
    return (await res.json()) as JszInfo;
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await Promise.all(
      states.map(async (state) => {
        const server = state.server;
        if (server) {
          state.server = undefined;
          await server.stop("SIGKILL");
          state.history += server.output();
        }
      }),
    );
    await Promise.all(states.map((s) => rm(s.storeDir, { recursive: true, force: true })));
  };

  const nodeView = (state: NodeState): NatsClusterNode => ({
    name: state.name,
    get url() {
      return `nats://127.0.0.1:${state.clientPort}`;
    },
    get clientPort() {
      return state.clientPort;
    },
    clusterPort: state.clusterPort,
    monitorPort: state.monitorPort,
    storeDir: state.storeDir,
    get running() {
      return state.server !== undefined;
    },
    output: () => state.history + (state.server?.output() ?? ""),
    jsz: () => jsz(state),
  });

  const metaLeaderSeenBy = async (state: NodeState): Promise<string | undefined> => {
    const info = await jsz(state);
    const leader = info.meta_cluster?.leader;
    return leader && (info.meta_cluster?.cluster_size ?? 0) >= size ? leader : undefined;
  };

  const waitForMetaLeader = async (timeoutMs = startTimeoutMs) =>
    await waitFor(
      "a JetStream meta leader that every running node agrees on",
      async () => {
        const running = states.filter((s) => s.server);
        const leaders = await Promise.all(running.map(metaLeaderSeenBy));
        const first = leaders[0];
        return first && leaders.every((l) => l === first) ? first : undefined;
      },
      { timeoutMs, intervalMs: 50 },
    );

  const node = (i: number): NodeState => {
    const state = states[i];
    if (!state) throw new Error(`no node ${i}: the cluster has nodes 0..${size - 1}`);
    return state;
  };

  try {
    // All at once: a clustered JetStream node waits for its peers.
    await Promise.all(states.map(startNode));
    await waitForMetaLeader();
  } catch (err) {
    const logs = states.map((s) => `--- ${s.name}\n${s.server?.output() ?? ""}`).join("\n");
    await stop();
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${logs}`);
  }

  const nodes = states.map(nodeView);
  return {
    get urls() {
      return states.map((s) => `nats://127.0.0.1:${s.clientPort}`);
    },
    nodes,
    indexOf: (name) => states.findIndex((s) => s.name === name),
    async kill(i, signal = "SIGKILL") {
      const state = node(i);
      const server = state.server;
      if (!server) return;
      state.server = undefined;
      await server.stop(signal);
      state.history += server.output();
    },
    async restart(i) {
      const state = node(i);
      if (state.server) throw new Error(`${state.name} is still running; kill it first`);
      await startNode(state);
      await waitFor("the restarted node to see a meta leader", () => metaLeaderSeenBy(state), {
        timeoutMs: startTimeoutMs,
        intervalMs: 50,
      });
    },
    waitForMetaLeader,
    problems: () =>
      states.flatMap((s) =>
        (s.history + (s.server?.output() ?? ""))
          .split("\n")
          .filter((line) => line.includes("[WRN]") || line.includes("[ERR]"))
          .map((line) => `${s.name}: ${line}`),
      ),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
