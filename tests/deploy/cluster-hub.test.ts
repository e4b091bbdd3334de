import { afterAll, describe, expect, test } from "bun:test";
import { type RunningHub, SERVICE_NAMES, startServices } from "../../services/runtime/run.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { parseConfig } from "../../shared/config/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { DEFAULT_CLIENTS, hubYaml } from "../helpers/hub.ts";
import { type NatsCluster, startNatsCluster } from "../helpers/nats-cluster.ts";
import { waitFor } from "../helpers/wait.ts";

// The hub on a three-node JetStream cluster with R3 streams and buckets: one node is SIGKILLed
// under a steady submit load and restarted. Every 202 must end in exactly one final status, the
// ingress must answer 503 (never 202) for runs it could not persist, and no job is duplicated.

const ACME = DEFAULT_CLIENTS[0] as (typeof DEFAULT_CLIENTS)[0];
const TEST_MS = 180_000;
let cluster: NatsCluster | undefined;
let running: RunningHub | undefined;

afterAll(async () => {
  await running?.stop().catch(() => {});
  await cluster?.stop();
});

describe("hub on a three-node cluster (R3)", () => {
  test(
    "a node killed under load: every accepted run finishes once, refusals are 503, no duplicates",
    async () => {
      cluster = await startNatsCluster({ size: 3 });
      const config = parseConfig(
        hubYaml(cluster.urls.join(","), DEFAULT_CLIENTS, "", {
          replicas: 3,
          publish_timeout: "2s",
        }),
        {},
        "cluster test",
      );
      running = await startServices(
        SERVICE_NAMES.filter((s) => s !== "callback"),
        {
          config,
          logger: createLogger({
            level: process.env.CLUSTER_LOG ?? "silent",
            service: "cluster-test",
          }),
          clock: systemClock,
          ids: randomIds,
        },
      );
      const base = running.ingress?.url ?? "";
      const info = await running.hub.jsm.streams.info(TOPOLOGY.eventsStream);
      expect(info.config.num_replicas).toBe(3);

      const t0 = Date.now();
      const statuses = new Map<number, number>();
      const trace = (what: string) =>
        process.stderr.write(
          `cluster test +${Date.now() - t0} ms: ${what}; accepted ${accepted.size}, 503 ${unavailable.size}, answers ${JSON.stringify([...statuses])}\n`,
        );
      const accepted = new Map<string, string>(); // request_id → job_id
      const unavailable = new Set<string>();
      const unexpected: string[] = [];
      let n = 0;
      let load = true;
      const submit = async (request_id: string) => {
        const res = await fetch(`${base}/run`, {
          method: "POST",
          headers: { authorization: `Bearer ${ACME.token}`, "content-type": "application/json" },
          body: JSON.stringify({ request_id, route: "demo.echo", input: request_id }),
        });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 202 || res.status === 200) {
          const job = (await res.json()) as { job_id: string };
          const earlier = accepted.get(request_id);
          if (earlier && earlier !== job.job_id) unexpected.push(`${request_id}: two job ids`);
          accepted.set(request_id, job.job_id);
          unavailable.delete(request_id);
        } else if (res.status === 503) {
          unavailable.add(request_id);
          // A client backs off on 503 (the answer carries Retry-After). Without a pause the
          // workers pile up thousands of refused ids in the outage, each retried below.
          await Bun.sleep(100);
        } else {
          unexpected.push(`${request_id}: ${res.status} ${await res.text()}`);
        }
      };
      const workers = Array.from({ length: 3 }, async () => {
        while (load) await submit(`cl-${n++}`);
      });
      await waitFor("some load before the kill", () => accepted.size >= 100, { timeoutMs: 20_000 });
      const leader =
        (await running.hub.jsm.streams.info(TOPOLOGY.eventsStream)).cluster?.leader ?? "n1";
      const victim = Math.max(0, cluster.indexOf(leader));
      trace(`killing ${leader}`);
      await cluster.kill(victim, "SIGKILL");
      const atKill = accepted.size;
      await waitFor(
        "submissions to succeed again without the node",
        () => accepted.size >= atKill + 100,
        {
          timeoutMs: 45_000,
        },
      );
      trace("restarting");
      await cluster.restart(victim);
      trace("restarted");
      const atRestart = accepted.size;
      await waitFor("load after the restart", () => accepted.size >= atRestart + 100, {
        timeoutMs: 30_000,
      });
      load = false;
      await Promise.all(workers);
      trace("load stopped");
      expect(unexpected).toEqual([]);

      // A 503 means "not known to be persisted": retrying the same request_id gives 202 (it was
      // not) or 200 (it was, and only the acknowledgement was lost). Either way, one job.
      for (const request_id of [...unavailable]) await submit(request_id);
      trace("503s retried");
      expect(unavailable.size).toBe(0);

      const jsm = running.hub.jsm;
      await waitFor(
        "every accepted run to reach a final status",
        async () => {
          const s = await jsm.streams.info(TOPOLOGY.eventsStream, {
            subjects_filter: "sy.evt.acme.*.job",
          });
          const done = s.state.subjects ?? {};
          for (const [, jobId] of accepted) if (!done[`sy.evt.acme.${jobId}.job`]) return false;
          return true;
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );
      trace("every accepted run is final");
      const all = await jsm.streams.info(TOPOLOGY.eventsStream, {
        subjects_filter: "sy.evt.acme.*.*",
      });
      const subjects = all.state.subjects ?? {};
      for (const [, jobId] of accepted) {
        expect(subjects[`sy.evt.acme.${jobId}.run`]).toBe(1);
        expect(subjects[`sy.evt.acme.${jobId}.job`]).toBe(1);
      }
      const runSubjects = Object.keys(subjects).filter((s) => s.endsWith(".run"));
      expect(runSubjects.length).toBe(new Set(accepted.values()).size);
      process.stdout.write(
        `cluster test: ${accepted.size} runs accepted, node ${cluster.nodes[victim]?.name} (stream leader) killed and restarted; nats-server problems logged: ${cluster.problems().length}\n`,
      );
    },
    TEST_MS,
  );
});
