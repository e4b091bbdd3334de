/**
 * `switchyard setup`: creates or updates everything the hub keeps in JetStream (the events stream,
 * the work queues, every bucket and every durable consumer) with the admin's NATS credential, so
 * that services holding only their own role's permissions start against it
 * (nats.manage_topology: false). It starts every service once and stops it: what a service
 * creates at start is, by construction, exactly what setup creates. On a running hub it joins for
 * that moment as one more replica of each service, which every service allows.
 */
import type { Clock } from "../../shared/clock/index.ts";
import type { Config } from "../../shared/config/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { SERVICE_NAMES, startServices } from "./run.ts";

export interface SetupDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
}

export async function setupTopology(deps: SetupDeps): Promise<void> {
  // Loopback and port 0: setup serves nobody, and must not collide with a running hub's ports.
  // No search index (it lives outside NATS, and the indexer makes its own durable) and no audit
  // key (setup appends no checkpoint).
  const { signing_key_pem: _, ...audit } = deps.config.audit;
  const config: Config = {
    ...deps.config,
    server: { ...deps.config.server, host: "127.0.0.1", port: 0 },
    monitoring: { ...deps.config.monitoring, host: "127.0.0.1", port: 0 },
    nats: { ...deps.config.nats, manage_topology: true },
    index: { ...deps.config.index, enabled: false },
    audit,
  };
  // Setup also spreads the partition streams' leaders over the cluster's nodes.
  const running = await startServices(SERVICE_NAMES, { ...deps, config, placeLeaders: true });
  await running.stop();
  deps.logger.info("setup done: streams, buckets and consumers are in place");
}
