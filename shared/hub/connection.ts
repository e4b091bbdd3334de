import {
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ensureTopology, TOPOLOGY } from "../bus/index.ts";
import { type Config, parseDuration } from "../config/index.ts";
import type { Logger } from "../log/index.ts";
import { coalesceWrites } from "../nats/index.ts";

/** Everything a service needs from NATS, connected and with the topology in place. */
export interface HubConnection {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly jobs: KV;
  readonly meta: KV;
  /** The layout version of the store (shared/bus/store-version.ts); services refuse an old one. */
  readonly storeVersion: number;
  /** Tracks the connection status events: false while disconnected or closed. */
  connected(): boolean;
  /** True when connected and the events stream exists. */
  topologyReady(): Promise<boolean>;
  /** Drains subscriptions and pending publishes, then closes. */
  drain(): Promise<void>;
}

/**
 * Connects to NATS (reconnecting forever), creates or updates the stream and buckets, and watches
 * the connection status so HTTP handlers can refuse at once while NATS is away.
 */
export async function connectHub(
  config: Config,
  logger: Logger,
  name: string,
): Promise<HubConnection> {
  const nc = await connect({
    servers: config.nats.url.split(","),
    name: `switchyard-${name}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
    // nats.js otherwise builds an Error (with a stack) for every request, to point async
    // failures at their caller: 3–9% of CPU in the hot services (bench profiles).
    noAsyncTraces: true,
  });
  if (!coalesceWrites(nc)) {
    logger.warn("nats.js internals changed: writes are not coalesced (slower, still correct)");
  }
  let up = true;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") {
        up = false;
        logger.warn({ server: status.server }, "nats disconnected");
      } else if (status.type === "reconnect") {
        up = true;
        logger.info({ server: status.server }, "nats reconnected");
      }
    }
  })();
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const { jobs, meta, storeVersion } = await ensureTopology(nc, jsm, {
    replicas: config.nats.replicas,
    eventsMaxAgeMs: parseDuration(config.nats.events_max_age),
    duplicateWindowMs: parseDuration(config.nats.duplicate_window),
    eventsMaxBytes: config.nats.events_max_bytes,
  });
  logger.info(
    { server: nc.info?.version, replicas: config.nats.replicas },
    "nats connected, topology ready",
  );
  return {
    nc,
    js,
    jsm,
    jobs,
    meta,
    storeVersion,
    connected: () => up && !nc.isClosed(),
    async topologyReady() {
      if (!up || nc.isClosed()) return false;
      try {
        await jsm.streams.info(TOPOLOGY.eventsStream);
        return true;
      } catch {
        return false;
      }
    },
    async drain() {
      if (!nc.isClosed()) await nc.drain();
    },
  };
}
