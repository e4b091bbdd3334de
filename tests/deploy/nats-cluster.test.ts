import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  StorageType,
} from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type NatsCluster, startNatsCluster } from "../helpers/nats-cluster.ts";
import { waitFor } from "../helpers/wait.ts";

// A three-node JetStream cluster on loopback, like the StatefulSet in deploy/k8s/base, used to
// check what R3 promises: a node may die (SIGKILL) while publishing goes on, and once it is back
// every acknowledged message is there, once, in order, on every replica.

let cluster: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let js: JetStreamClient;
const publishErrors: string[] = [];
const unavailability: string[] = [];
/** Per test: failovers take seconds; `bun test` alone would allow only 5. */
const CLUSTER_TEST_MS = 45_000;

beforeAll(async () => {
  cluster = await startNatsCluster({ size: 3 });
  nc = await connect({
    servers: [...cluster.urls],
    maxReconnectAttempts: -1,
    reconnectTimeWait: 50,
    name: "deploy-cluster-test",
  });
  jsm = await jetstreamManager(nc, { timeout: 3_000 });
  js = jetstream(nc, { timeout: 3_000 });
}, CLUSTER_TEST_MS);

afterAll(async () => {
  await nc?.close().catch(() => {});
  // Known nats-server 2.9.10 cluster behaviour shows up here rather than in the assertions.
  const problems = cluster?.problems() ?? [];
  if (publishErrors.length > 0) {
    const counts = new Map<string, number>();
    for (const line of publishErrors) {
      const reason = line.slice(line.indexOf(": ") + 2);
      counts.set(reason, (counts.get(reason) ?? 0) + 1);
    }
    console.log(`publish attempts that failed and were retried (${publishErrors.length}):`);
    for (const [reason, n] of counts) console.log(`  ${n}x ${reason}`);
  }
  for (const line of unavailability) console.log(line);
  if (problems.length > 0) {
    // Grouped without pids, times, ports and attempt counters, so that patterns stand out.
    const grouped = new Map<string, number>();
    for (const line of problems) {
      const key = line
        .replace(/\[\d+\] \d{4}\/\d\d\/\d\d [\d:.]+ /, "")
        .replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:<port>")
        .replace(/attempt \d+/g, "attempt N")
        .replace(/\d+(\.\d+)?(ms|s)\b/g, "<duration>");
      grouped.set(key, (grouped.get(key) ?? 0) + 1);
    }
    console.log(`nats-server warnings/errors during the cluster tests (${problems.length} lines):`);
    for (const [line, n] of grouped) console.log(`  ${n}x ${line}`);
  }
  await cluster?.stop();
}, CLUSTER_TEST_MS);

async function streamLeader(stream: string): Promise<string> {
  return await waitFor(
    `a leader for stream ${stream}`,
    async () => (await jsm.streams.info(stream)).cluster?.leader || undefined,
    { timeoutMs: 15_000, intervalMs: 50 },
  );
}

async function allReplicasCurrent(stream: string, replicas: number): Promise<void> {
  await waitFor(
    `all ${replicas} replicas of ${stream} to be current`,
    async () => {
      const info = await jsm.streams.info(stream);
      const followers = info.cluster?.replicas ?? [];
      return (
        Boolean(info.cluster?.leader) &&
        followers.length === replicas - 1 &&
        followers.every((r) => r.current && !r.offline)
      );
    },
    { timeoutMs: 20_000, intervalMs: 50 },
  );
}

/** Publishes with a message id, retrying through leader elections; dedup makes retries safe. */
async function publishSurely(subject: string, body: string): Promise<number> {
  return await waitFor(
    `an acknowledged publish of ${body}`,
    async () => {
      try {
        const ack = await js.publish(subject, body, { msgID: body, timeout: 1_000 });
        return ack.seq;
      } catch (err) {
        publishErrors.push(`${body}: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
      }
    },
    { timeoutMs: 20_000, intervalMs: 25 },
  );
}

async function readAll(stream: string, count: number): Promise<string[]> {
  const bodies: string[] = [];
  for (let seq = 1; seq <= count; seq++) {
    const msg = await jsm.streams.getMessage(stream, { seq });
    if (!msg) throw new Error(`${stream} has no message at sequence ${seq}`);
    bodies.push(msg.string());
  }
  return bodies;
}

describe("three-node nats-server cluster (tests/helpers/nats-cluster.ts)", () => {
  test(
    "starts n1..n3 on distinct loopback ports, never 4222, with one agreed meta leader",
    async () => {
      expect(cluster.nodes.map((n) => n.name)).toEqual(["n1", "n2", "n3"]);
      const ports = cluster.nodes.flatMap((n) => [n.clientPort, n.clusterPort, n.monitorPort]);
      expect(new Set(ports).size).toBe(9);
      expect(ports).not.toContain(4222);
      expect(new Set(cluster.nodes.map((n) => n.storeDir)).size).toBe(3);
      for (const url of cluster.urls) expect(url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
      const leader = await cluster.waitForMetaLeader();
      expect(["n1", "n2", "n3"]).toContain(leader);
      for (const node of cluster.nodes) {
        const info = await node.jsz();
        expect(info.meta_cluster?.cluster_size).toBe(3);
        expect(info.meta_cluster?.leader).toBe(leader);
      }
    },
    CLUSTER_TEST_MS,
  );

  test(
    "R3 stream: SIGKILL the stream leader mid-stream, keep publishing, restart it; nothing lost or doubled",
    async () => {
      const stream = "DEPLOY_R3";
      await jsm.streams.add({
        name: stream,
        subjects: ["deploy.r3.>"],
        num_replicas: 3,
        storage: StorageType.File,
        duplicate_window: 120_000_000_000,
      });
      await allReplicasCurrent(stream, 3);

      const expected: string[] = [];
      const publish = async (i: number) => {
        const body = `m-${String(i).padStart(4, "0")}`;
        expected.push(body);
        return await publishSurely(`deploy.r3.${i % 7}`, body);
      };
      for (let i = 0; i < 150; i++) expect(await publish(i)).toBe(i + 1);

      const victim = cluster.indexOf(await streamLeader(stream));
      expect(victim).toBeGreaterThanOrEqual(0);
      const victimName = cluster.nodes[victim]?.name;
      await cluster.kill(victim, "SIGKILL");
      expect(cluster.nodes[victim]?.running).toBe(false);

      // Two of three replicas remain: a quorum, so publishing must go on (after an election).
      const killedAt = Date.now();
      expect(await publish(150)).toBe(151);
      unavailability.push(
        `R3 stream ${stream}: first publish acknowledged ${Date.now() - killedAt} ms after SIGKILL of its leader ${victimName}`,
      );
      for (let i = 151; i < 300; i++) expect(await publish(i)).toBe(i + 1);
      const newLeader = await streamLeader(stream);
      expect(newLeader).not.toBe(victimName);
      const whileDown = await jsm.streams.info(stream);
      expect(whileDown.state.messages).toBe(300);
      expect(whileDown.state.last_seq).toBe(300);

      await cluster.restart(victim);
      for (let i = 300; i < 350; i++) expect(await publish(i)).toBe(i + 1);
      await allReplicasCurrent(stream, 3);

      // The restarted node's own copy caught up (read from its monitoring endpoint, not the leader).
      const restarted = cluster.nodes[victim];
      if (!restarted) throw new Error("victim node vanished");
      const local = await waitFor(
        `${restarted.name}'s replica of ${stream} to hold all 350 messages`,
        async () => {
          const info = await restarted.jsz();
          const detail = info.account_details
            ?.flatMap((a) => a.stream_detail ?? [])
            .find((s) => s.name === stream);
          return detail && detail.state.messages === 350 ? detail.state : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      expect(local.first_seq).toBe(1);
      expect(local.last_seq).toBe(350);

      const info = await jsm.streams.info(stream);
      expect(info.state.messages).toBe(350);
      expect(info.state.first_seq).toBe(1);
      expect(info.state.last_seq).toBe(350);
      expect(await readAll(stream, 350)).toEqual(expected);
    },
    CLUSTER_TEST_MS,
  );

  test(
    "R3 stream: a write that expects last-subject-sequence 0 is refused once the subject has a message, before and after a leader failover",
    async () => {
      // The hub's idempotency rule: one subject per job, first write expects sequence 0.
      const stream = "DEPLOY_R3_IDEM";
      await jsm.streams.add({
        name: stream,
        subjects: ["deploy.jobs.>"],
        num_replicas: 3,
        storage: StorageType.File,
      });
      await allReplicasCurrent(stream, 3);

      const first = await js.publish("deploy.jobs.j1", "created", {
        expect: { lastSubjectSequence: 0 },
      });
      expect(first.seq).toBe(1);
      await expect(
        js.publish("deploy.jobs.j1", "created again", { expect: { lastSubjectSequence: 0 } }),
      ).rejects.toThrow(/wrong last sequence/);

      const leader = cluster.indexOf(await streamLeader(stream));
      await cluster.kill(leader, "SIGKILL");
      // A new leader must still refuse the duplicate creation and accept a new job.
      const refused = await waitFor(
        "the new stream leader to answer a conditional publish",
        async () => {
          try {
            await js.publish("deploy.jobs.j1", "created after failover", {
              expect: { lastSubjectSequence: 0 },
              timeout: 1_000,
            });
            return "accepted";
          } catch (err) {
            const message = err instanceof Error ? err.message : String(err);
            if (/wrong last sequence/.test(message)) return "refused";
            publishErrors.push(`idempotency probe: ${message}`);
            return undefined;
          }
        },
        { timeoutMs: 20_000, intervalMs: 25 },
      );
      expect(refused).toBe("refused");
      const second = await js.publish("deploy.jobs.j2", "created", {
        expect: { lastSubjectSequence: 0 },
      });
      expect(second.seq).toBe(2);
      await cluster.restart(leader);
      await allReplicasCurrent(stream, 3);
      expect((await jsm.streams.info(stream)).state.messages).toBe(2);
    },
    CLUSTER_TEST_MS,
  );
});
