import { type KV, Kvm } from "@nats-io/kv";
import { describePlacement, readPlacement, TOPOLOGY } from "../../shared/bus/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import {
  CLAIMS_BUCKET,
  type ClaimRecord,
  claimKey,
  LEASE_BUCKET,
  memberKey,
} from "../../shared/lease/index.ts";
import { compareVersions } from "../../shared/nats/index.ts";
import type { CommandIo } from "./events-command.ts";

/** Oldest nats-server supported in production (docs/architecture.md, "nats-server versions"). */
export const MIN_PRODUCTION_NATS = "2.11.0";
const MAX_VIEWS_COUNTED = 200_000;

/**
 * `switchyard status`: one screen for operators: server version, streams, consumers, buckets,
 * projector lag and job counts by status.
 */
export async function runStatusCommand(hub: HubConnection, io: CommandIo): Promise<number> {
  const version = hub.nc.info?.version ?? "unknown";
  const lines: string[] = [`nats-server ${version} at ${hub.nc.getServer()}`];
  if (compareVersions(version, MIN_PRODUCTION_NATS) < 0) {
    lines.push(
      `  WARNING: below ${MIN_PRODUCTION_NATS}, the minimum for production clusters (expected-last-subject-sequence on replicated streams; nats-server #4320)`,
    );
  }
  lines.push("", "streams");
  for await (const s of hub.jsm.streams.list()) {
    lines.push(
      `  ${s.config.name.padEnd(24)} messages=${s.state.messages} bytes=${s.state.bytes} first_seq=${s.state.first_seq} last_seq=${s.state.last_seq} replicas=${s.config.num_replicas}`,
    );
    if (s.config.name.startsWith("KV_")) continue;
    for await (const c of hub.jsm.consumers.list(s.config.name)) {
      lines.push(
        `    consumer ${c.name.padEnd(16)} pending=${c.num_pending} ack_pending=${c.num_ack_pending} redelivered=${c.num_redelivered} waiting=${c.num_waiting}`,
      );
    }
  }
  lines.push("", ...(await partitionLines(hub)));
  lines.push("", "buckets");
  for await (const b of new Kvm(hub.nc).list())
    lines.push(`  ${b.bucket.padEnd(24)} values=${b.values} replicas=${b.replicas}`);
  const counts = new Map<string, number>();
  let counted = 0;
  for (let p = 0; p < hub.layout.partitions && counted <= MAX_VIEWS_COUNTED; p++) {
    const views = hub.views(p);
    for await (const key of await views.keys()) {
      if (++counted > MAX_VIEWS_COUNTED) break;
      const entry = await views.get(key);
      if (entry?.operation !== "PUT" || entry.length === 0) continue;
      const status = (entry.json() as { status?: string }).status ?? "?";
      counts.set(status, (counts.get(status) ?? 0) + 1);
    }
  }
  lines.push(
    "",
    `jobs by status${counted > MAX_VIEWS_COUNTED ? ` (first ${MAX_VIEWS_COUNTED} views)` : ""}: ${
      [...counts].map(([s, n]) => `${s}=${n}`).join(" ") || "none"
    }`,
  );
  io.stdout(`${lines.join("\n")}\n`);
  return 0;
}

/**
 * One line per partition: its stream, the stream's leader (on a cluster), the projector's lag on
 * it; then the search index's lag over every partition.
 */
async function partitionLines(hub: HubConnection): Promise<string[]> {
  const lines = [`partitions: ${hub.layout.partitions} (fixed when the store was created)`];
  const holders = await claimHolders(hub);
  for (let p = 0; p < hub.layout.partitions; p++) {
    const stream = hub.layout.stream(p);
    const info = await hub.jsm.streams.info(stream).catch(() => null);
    const projector = await hub.jsm.consumers
      .info(stream, TOPOLOGY.consumers.projector)
      .catch(() => null);
    // A single server (no cluster) reports no leader: it is the stream's only node.
    const leader = info?.cluster?.leader ?? (info ? "standalone" : "missing");
    const lag = projector
      ? `${projector.num_pending + projector.num_ack_pending} events`
      : "no projector consumer yet";
    const held = `; held by projector=${await holders(p, "projector")} indexer=${await holders(p, "indexer")}`;
    lines.push(`  partition ${p}: stream ${stream} leader=${leader} projector lag: ${lag}${held}`);
  }
  const placement =
    hub.layout.partitions > 1
      ? await readPlacement(hub.jsm, hub.layout.streams()).catch(() => undefined)
      : undefined;
  if (placement) lines.push(`partition leaders per node: ${describePlacement(placement)}`);
  let indexLag: number | undefined;
  let fed = 0;
  for (const stream of hub.layout.streams()) {
    const index = await hub.jsm.consumers.info(stream, "index").catch(() => null);
    if (index) indexLag = (indexLag ?? 0) + index.num_pending + index.num_ack_pending;
    else fed++;
  }
  // Without its own durable a partition's index is fed from the projector's (or not running).
  const feeds =
    fed > 0
      ? `; ${fed} partition(s) without an index durable: fed from the projector's deliveries, or no indexer runs`
      : "";
  lines.push(
    `index lag: ${indexLag === undefined ? "no index durable" : `${indexLag} events (search index, consumer "index"${hub.layout.partitions > 1 ? " of every partition that has one" : ""})`}${feeds}`,
  );
  return lines;
}

/**
 * Who holds a partition of a read model (docs/architecture.md, "Partition claims"): the claim's
 * holder while its owner's member record lives, else "nobody".
 */
async function claimHolders(hub: HubConnection) {
  const kvm = new Kvm(hub.nc);
  const open = (bucket: string) => kvm.open(bucket).catch((): KV | undefined => undefined);
  const [claims, leases] = await Promise.all([open(CLAIMS_BUCKET), open(LEASE_BUCKET)]);
  return async (p: number, group: string): Promise<string> => {
    const entry = await claims?.get(claimKey(group, p)).catch(() => null);
    if (entry?.operation !== "PUT") return "nobody";
    const claim = entry.json<ClaimRecord>();
    if (claim.owner === "") return "nobody";
    const member = await leases?.get(memberKey(claim.owner)).catch(() => null);
    return member?.operation === "PUT" ? claim.holder : "nobody";
  };
}
