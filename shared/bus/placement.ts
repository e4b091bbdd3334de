import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/** Each partition stream's leader node, and the nodes its replicas live on. */
export interface LeaderPlacement {
  /** stream → leader node ("" while the stream has none). */
  readonly leaders: ReadonlyMap<string, string>;
  /** Every node holding a replica of one of the streams, sorted. */
  readonly nodes: readonly string[];
}

/** The most partition streams one node should lead: ceil(P/N). */
export function leaderLimit(streams: number, nodes: number): number {
  return Math.ceil(streams / Math.max(1, nodes));
}

/** Streams led per node (every node named, 0 when it leads none). */
export function leadersPerNode(placement: LeaderPlacement): Map<string, number> {
  const counts = new Map<string, number>(placement.nodes.map((node) => [node, 0]));
  for (const leader of placement.leaders.values()) {
    if (leader !== "") counts.set(leader, (counts.get(leader) ?? 0) + 1);
  }
  return counts;
}

/**
 * The streams whose leaders should step down so that no node leads more than ceil(P/N): from each
 * node above the limit, its excess streams (the last ones by name, so the choice is stable).
 * Pure: the caller asks the servers and repeats while something is left.
 */
export function streamsToStepDown(placement: LeaderPlacement): string[] {
  const limit = leaderLimit(placement.leaders.size, placement.nodes.length);
  const byNode = new Map<string, string[]>();
  for (const [stream, leader] of [...placement.leaders].sort(([a], [b]) => a.localeCompare(b))) {
    if (leader !== "") byNode.set(leader, [...(byNode.get(leader) ?? []), stream]);
  }
  return [...byNode.values()].flatMap((streams) => streams.slice(limit));
}

/** One line for logs and `switchyard status`: `n1=2 n2=1 n3=1 (limit 2: balanced)`. */
export function describePlacement(placement: LeaderPlacement): string {
  const limit = leaderLimit(placement.leaders.size, placement.nodes.length);
  const counts = [...leadersPerNode(placement)].map(([node, n]) => `${node}=${n}`).join(" ");
  const leaderless = [...placement.leaders.values()].filter((l) => l === "").length;
  const balanced = streamsToStepDown(placement).length === 0 && leaderless === 0;
  return `${counts} (at most ${limit} each: ${balanced ? "balanced" : "unbalanced"}${leaderless > 0 ? `, ${leaderless} without a leader` : ""})`;
}

/** Reads each stream's leader and replicas; undefined on a single server (no cluster). */
export async function readPlacement(
  jsm: JetStreamManager,
  streams: readonly string[],
): Promise<LeaderPlacement | undefined> {
  const leaders = new Map<string, string>();
  const nodes = new Set<string>();
  for (const stream of streams) {
    const info = await jsm.streams.info(stream);
    const cluster = info.cluster;
    if (cluster === undefined || (cluster.replicas ?? []).length === 0) return undefined;
    leaders.set(stream, cluster.leader ?? "");
    if (cluster.leader) nodes.add(cluster.leader);
    for (const replica of cluster.replicas ?? []) nodes.add(replica.name);
  }
  return { leaders, nodes: [...nodes].sort() };
}

const STEPDOWN_ROUNDS = 8;
const ROUND_WAIT_MS = 500;

/**
 * Spreads the partition streams' leaders over the nodes (docs/deploy.md, "Where partition leaders
 * run"): while a node leads more than ceil(P/N) of them, asks its excess streams' leaders to step
 * down (`$JS.API.STREAM.LEADER.STEPDOWN.<stream>`; nats-server 2.9 elects the new leader among the
 * other replicas, so this repeats), for a bounded number of rounds. Returns the last placement
 * read (undefined on a single server) and the step-downs asked for.
 */
export async function spreadLeaders(deps: {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly streams: readonly string[];
  readonly rounds?: number;
  readonly waitMs?: number;
}): Promise<{ placement: LeaderPlacement | undefined; stepDowns: number }> {
  const waitMs = deps.waitMs ?? ROUND_WAIT_MS;
  let stepDowns = 0;
  let placement = await readPlacement(deps.jsm, deps.streams);
  for (let round = 0; placement && round < (deps.rounds ?? STEPDOWN_ROUNDS); round++) {
    const leaderless = [...placement.leaders.values()].some((leader) => leader === "");
    const excess = leaderless ? [] : streamsToStepDown(placement);
    if (!leaderless && excess.length === 0) break;
    for (const stream of excess) {
      // A refused step-down (no other current replica) is left for the next round.
      await deps.nc
        .request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, undefined, { timeout: 5_000 })
        .catch(() => undefined);
      stepDowns++;
    }
    await Bun.sleep(waitMs);
    placement = await readPlacement(deps.jsm, deps.streams);
  }
  return { placement, stepDowns };
}
