import { Agent as HttpsAgent } from "node:https";

/** One checked TLS destination: a connection to it may carry any request for the same key. */
export interface Destination {
  /** The name in the URL (Host header, TLS server name). */
  readonly hostname: string;
  readonly port: string;
  /** The address the egress check allowed; connections are pinned to it. */
  readonly address: string;
  /** Extra CA certificates, part of the key so a connection is never shared across trust roots. */
  readonly ca?: string | readonly string[];
}

/** Keep-alive connections per checked destination (see {@link createConnectionPool}). */
export interface ConnectionPool {
  /** The keep-alive agent of a destination, created on first use. */
  agentFor(destination: Destination): HttpsAgent;
  /** Destinations with an agent. */
  size(): number;
  /** Closes every pooled connection; later calls to agentFor start a new pool. */
  close(): void;
}

export interface ConnectionPoolOptions {
  /** Destinations kept; the least recently used one's connections are closed beyond it. */
  readonly maxDestinations?: number;
  /**
   * Idle connections are closed after this, below the 5 s keep-alive timeout of Node's and many
   * other servers, so a request rarely meets a connection the receiver is closing.
   */
  readonly idleMs?: number;
  /** Idle connections kept per destination. */
  readonly maxIdlePerDestination?: number;
}

function keyOf(d: Destination): string {
  const ca = d.ca === undefined ? "" : [d.ca].flat().join("\n");
  return `${d.hostname}|${d.port}|${d.address}|${ca}`;
}

/**
 * Keep-alive agents keyed by the checked destination, for TLS callbacks (send-tls.ts). The key
 * includes the name and the pinned address, so a reused connection always goes to an address that
 * passed the egress check, for the name it was verified for; a name that later resolves elsewhere
 * gets its own key (and its own check). Plain HTTP keeps its connections in Bun's fetch
 * (send-plain.ts), which uses a pool only when one is given. Without reuse every callback paid a
 * TCP (and TLS) handshake: 10% of the callback service's CPU in profiles.
 */
export function createConnectionPool(options: ConnectionPoolOptions = {}): ConnectionPool {
  const { maxDestinations = 256, idleMs = 4_000, maxIdlePerDestination = 16 } = options;
  const agents = new Map<string, HttpsAgent>();
  return {
    agentFor(destination) {
      const key = keyOf(destination);
      const found = agents.get(key);
      if (found) {
        // Map order is insertion order: re-inserting marks the destination as recently used.
        agents.delete(key);
        agents.set(key, found);
        return found;
      }
      const settings = { keepAlive: true, timeout: idleMs, maxFreeSockets: maxIdlePerDestination };
      const agent = new HttpsAgent(settings);
      agents.set(key, agent);
      if (agents.size > maxDestinations) {
        const [oldestKey, oldest] = agents.entries().next().value as [string, HttpsAgent];
        agents.delete(oldestKey);
        oldest.destroy();
      }
      return agent;
    },
    size: () => agents.size,
    close() {
      for (const agent of agents.values()) agent.destroy();
      agents.clear();
    },
  };
}
