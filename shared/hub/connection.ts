import {
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  checkPartitions,
  describePlacement,
  ensureTopology,
  isJsError,
  readStorePartitions,
  readStoreVersion,
  STORE_VERSION,
  spreadLeaders,
  streamsToStepDown,
  TOPOLOGY,
} from "../bus/index.ts";
import { type Config, parseDuration } from "../config/index.ts";
import { createEventLayout, type EventLayout, type JobRef } from "../jobs/index.ts";
import type { Logger } from "../log/index.ts";
import { coalesceWrites, identityOptions, muxPubAcks, redactUrl } from "../nats/index.ts";
import { refusalOf, unreadableFile } from "./refusals.ts";

/** Everything a service needs from NATS, connected and with the topology in place. */
export interface HubConnection {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Every name of the partitioned event log: streams, subjects, view buckets, lease keys. */
  readonly layout: EventLayout;
  /** Partition 0's job views: the only view bucket of a single-partition hub. */
  readonly jobs: KV;
  /** Partition p's job view bucket. */
  views(p: number): KV;
  /** The view bucket of the partition a job lives in. */
  viewsOf(ref: Pick<JobRef, "job_id">): KV;
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

/** A first connection that did not succeed within nats.connect_timeout. */
export class NatsUnreachableError extends Error {
  readonly code = "nats_unreachable";
  constructor(
    readonly url: string,
    readonly waitedMs: number,
    reason: string,
  ) {
    super(
      `cannot reach NATS at ${url} (${reason}); gave up after ${Math.round(waitedMs / 1000)} s (nats.connect_timeout). Check NATS_URL / nats.url and that the server runs.`,
    );
    this.name = "NatsUnreachableError";
  }
}

/** The stream or buckets are missing and this connection may not create them. */
export class HubNotFoundError extends Error {
  readonly code = "hub_not_found";
  constructor(url: string, missing: string) {
    super(
      `no Switchyard hub at ${url}: ${missing} does not exist. Nothing was created. Create it with switchyard setup (the admin credential), or start the hub (switchyard up or serve) against this server first, or point NATS_URL at the hub's server.`,
    );
    this.name = "HubNotFoundError";
  }
}

/** One failed attempt of the first connection, for a visible countdown. */
export interface ConnectWait {
  readonly url: string;
  readonly attempt: number;
  readonly reason: string;
  readonly retryInMs: number;
  readonly givesUpInMs: number;
}

export interface ConnectOptions {
  /**
   * Create or update the stream and buckets; false: they must exist (CLI commands). Default:
   * nats.manage_topology.
   */
  readonly createTopology?: boolean;
  /**
   * For commands that open an existing hub: take the partition count from the store (sy_meta)
   * instead of refusing one that differs from nats.partitions (auditors need no config).
   */
  readonly partitionsFromStore?: boolean;
  /**
   * Spread the partition streams' leaders over the nodes even on a store that exists (`switchyard
   * setup`); a store created by this connection is always spread.
   */
  readonly placeLeaders?: boolean;
  /** Called before each retry of the first connection. */
  readonly onWaiting?: (wait: ConnectWait) => void;
}

const RETRY_STEPS_MS = [250, 1_000, 2_000, 5_000];

/**
 * The first connection, retried with a visible countdown until nats.connect_timeout: a server that
 * is down or an address that drops packets ends in {@link NatsUnreachableError}, not a silent
 * hang. Later disconnects reconnect forever (the services answer 503 meanwhile).
 */
async function connectFirst(config: Config, name: string, options: ConnectOptions) {
  const url = redactUrl(config.nats.url);
  const servers = config.nats.url.split(",");
  const unreadable = unreadableFile(config.nats);
  if (unreadable) throw unreadable;
  const budgetMs = parseDuration(config.nats.connect_timeout);
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    const leftMs = budgetMs - (Date.now() - started);
    try {
      return await connect({
        servers,
        name: `switchyard-${name}`,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        waitOnFirstConnect: false,
        timeout: Math.max(500, Math.min(5_000, leftMs)),
        // nats.js otherwise builds an Error (with a stack) for every request, to point async
        // failures at their caller: 3–9% of CPU in the hot services (bench profiles).
        noAsyncTraces: true,
        ...identityOptions(config.nats),
      });
    } catch (err) {
      const refusal = refusalOf(err, config.nats, url);
      if (refusal) throw refusal;
      const reason = (err as Error).message || String(err);
      const givesUpInMs = budgetMs - (Date.now() - started);
      if (givesUpInMs <= 0) throw new NatsUnreachableError(url, Date.now() - started, reason);
      const retryInMs = Math.min(RETRY_STEPS_MS[attempt - 1] ?? 5_000, givesUpInMs);
      options.onWaiting?.({ url, attempt, reason, retryInMs, givesUpInMs });
      await new Promise((resolve) => setTimeout(resolve, retryInMs));
    }
  }
}

/** Throws HubNotFoundError unless every named stream exists. */
async function requireStreams(jsm: JetStreamManager, url: string, streams: readonly string[]) {
  for (const stream of streams) {
    try {
      await jsm.streams.info(stream);
    } catch (err) {
      if (isJsError(err, "streamNotFound")) throw new HubNotFoundError(url, `stream ${stream}`);
      throw err;
    }
  }
}

/** Opens the streams and buckets without creating anything; throws HubNotFoundError if missing. */
async function openTopology(
  js: JetStreamClient,
  jsm: JetStreamManager,
  options: { url: string; partitions: number; fromStore: boolean },
) {
  await requireStreams(jsm, options.url, [`KV_${TOPOLOGY.metaBucket}`]);
  const kvm = new Kvm(js);
  const meta = await kvm.open(TOPOLOGY.metaBucket);
  const stored = (await readStorePartitions(meta)) ?? 1;
  const layout = createEventLayout(
    options.fromStore ? stored : checkPartitions(options.partitions, stored),
  );
  const buckets = Array.from({ length: layout.partitions }, (_, p) => layout.viewBucket(p));
  await requireStreams(jsm, options.url, [
    ...layout.streams(),
    ...buckets.map((bucket) => `KV_${bucket}`),
  ]);
  const found = await readStoreVersion(jsm, meta);
  return {
    layout,
    views: await Promise.all(buckets.map((bucket) => kvm.open(bucket))),
    meta,
    // The stream exists, so the store is never "fresh" here.
    storeVersion: found === "fresh" ? STORE_VERSION : found,
  };
}

/**
 * Connects to NATS (the first time with a bounded, visible retry; then reconnecting forever),
 * creates or updates the stream and buckets (or, for commands, requires them), and watches the
 * connection status so HTTP handlers can refuse at once while NATS is away.
 */
export async function connectHub(
  config: Config,
  logger: Logger,
  name: string,
  options: ConnectOptions = {},
): Promise<HubConnection> {
  const nc = await connectFirst(config, name, options);
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
  // Every JetStream publish of the hub (event appends, view writes) takes its PubAck on one reply
  // subscription instead of nats.js's request per publish (pub-ack-mux.ts).
  const js = muxPubAcks(jetstream(nc), { nc, inboxPrefix: config.nats.inbox_prefix });
  const manage = options.createTopology ?? config.nats.manage_topology;
  const opened = await (!manage
    ? openTopology(js, jsm, {
        url: redactUrl(config.nats.url),
        partitions: config.nats.partitions,
        fromStore: options.partitionsFromStore === true,
      })
    : ensureTopology(nc, jsm, {
        replicas: config.nats.replicas,
        eventsMaxAgeMs: parseDuration(config.nats.events_max_age),
        duplicateWindowMs: parseDuration(config.nats.duplicate_window),
        eventsMaxBytes: config.nats.events_max_bytes,
        partitions: config.nats.partitions,
        layoutOf: createEventLayout,
        js,
      })
  ).catch(async (err: unknown) => {
    await nc.close();
    throw err;
  });
  const { layout, views, meta, storeVersion } = opened;
  logger.info(
    { server: nc.info?.version, replicas: config.nats.replicas, partitions: layout.partitions },
    "nats connected, topology ready",
  );
  const created = "created" in opened && opened.created;
  if (manage && layout.partitions > 1 && (created || options.placeLeaders === true)) {
    await placeLeaders({ nc, jsm, streams: layout.streams(), logger });
  }
  return {
    nc,
    js,
    jsm,
    layout,
    jobs: views[0] as KV,
    views: (p) => views[p] as KV,
    viewsOf: (ref) => views[layout.partitionOf(ref)] as KV,
    meta,
    storeVersion,
    connected: () => up && !nc.isClosed(),
    async topologyReady() {
      if (!up || nc.isClosed()) return false;
      try {
        await jsm.streams.info(layout.stream(0));
        return true;
      } catch {
        return false;
      }
    },
    async drain() {
      if (nc.isClosed()) return;
      // While NATS is away there is no server to flush to: nats.js's drain would end in "connection
      // disconnected" and fail the stop (exit 1 on SIGTERM). Nothing unacknowledged is lost by
      // closing instead: a publish without its ack was never reported as stored.
      if (!up) {
        logger.warn("stopping while NATS is away: closing the connection without draining");
        await nc.close();
        return;
      }
      await nc.drain().catch(async (err: unknown) => {
        logger.warn({ err: (err as Error).message }, "drain failed; closing the connection");
        if (!nc.isClosed()) await nc.close();
      });
    },
  };
}

/**
 * Spreads the partition streams' leaders (docs/deploy.md, "Where partition leaders run") and says
 * where they ended; a placement that stays unbalanced is a warning, never a refusal.
 */
async function placeLeaders(deps: {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly streams: readonly string[];
  readonly logger: Logger;
}): Promise<void> {
  const { placement, stepDowns } = await spreadLeaders(deps).catch((err: unknown) => {
    deps.logger.warn({ err: (err as Error).message }, "partition leaders not placed");
    return { placement: undefined, stepDowns: 0 };
  });
  if (placement === undefined) return;
  const balanced = streamsToStepDown(placement).length === 0;
  deps.logger[balanced ? "info" : "warn"](
    { leaders: Object.fromEntries(placement.leaders), step_downs: stepDowns },
    `partition stream leaders: ${describePlacement(placement)}`,
  );
}
