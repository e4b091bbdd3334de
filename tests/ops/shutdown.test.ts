import { describe, expect, test } from "bun:test";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { DEFAULT_CLIENTS, hubYaml, startHub } from "../helpers/hub.ts";
import { startNats } from "../helpers/nats.ts";
import { startUp } from "../helpers/up-process.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = DEFAULT_CLIENTS[0] as (typeof DEFAULT_CLIENTS)[0];

const spawnUp = (natsUrl: string) =>
  startUp({ natsUrl, yaml: hubYaml(natsUrl, DEFAULT_CLIENTS), prefix: "switchyard-term-" });

describe("signals during start-up", () => {
  test("SIGHUP is held and SIGTERM stops the hub once it runs: exit 0, not 129 or 143", async () => {
    await using nats = await startNats();
    // Start-up waits for NATS while the server is down: a window that stays open for the test.
    await nats.kill();
    await using up = await spawnUp(nats.url);
    await waitFor("the hub to wait for NATS", () => up.out().includes("is not reachable"), {
      timeoutMs: 20_000,
    });
    up.proc.kill("SIGHUP");
    await waitFor("the SIGHUP to be held", () => up.out().includes("SIGHUP during start-up"));
    expect(up.proc.exitCode).toBeNull();
    up.proc.kill("SIGTERM");
    await waitFor("the SIGTERM to be held", () => up.out().includes("during start-up: once"));
    expect(up.proc.exitCode).toBeNull();
    await nats.restart();
    expect(await up.proc.exited).toBe(0);
    expect(up.out()).toContain('"msg":"stopped"');
  }, 60_000);
});

describe("graceful shutdown", () => {
  test("SIGTERM under load: exit 0, no accepted run lost, none processed twice", async () => {
    await using nats = await startNats();
    await using up = await spawnUp(nats.url);
    const { proc } = up;
    const base = await up.listening();
    const accepted = new Map<string, string>();
    let n = 0;
    let load = true;
    const workers = Array.from({ length: 8 }, async () => {
      while (load) {
        const request_id = `term-${n++}`;
        try {
          const res = await fetch(`${base}/run`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${ACME.token}`,
              "content-type": "application/json",
            },
            body: JSON.stringify({ request_id, route: "demo.sleep", input: request_id }),
          });
          if (res.status === 202)
            accepted.set(request_id, ((await res.json()) as { job_id: string }).job_id);
          else if (res.status !== 503) throw new Error(`unexpected ${res.status}`);
        } catch (err) {
          // After SIGTERM the listener is closed: connection refused is expected, anything
          // else is not.
          if (!String(err).match(/ECONNREFUSED|ConnectionRefused|Unable to connect|socket/i))
            throw err;
          return;
        }
      }
    });
    await waitFor("load to build up", () => accepted.size >= 200, { timeoutMs: 20_000 });
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    load = false;
    await Promise.all(workers);
    expect(up.out()).toContain("shutting down");

    // A fresh hub on the same NATS finishes whatever the first left un-acked.
    await using hub = await startHub({ nats });
    const jsm = hub.running.hub.jsm;
    await waitFor(
      "every accepted run to finish",
      async () => {
        const s = await jsm.streams.info(TOPOLOGY.eventsStream, {
          subjects_filter: "sy.evt.acme.*.job",
        });
        const subjects = s.state.subjects ?? {};
        for (const jobId of accepted.values())
          if (!subjects[`sy.evt.acme.${jobId}.job`]) return false;
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    // sleep jobs append running then done: exactly two status events each, never more.
    const s = await jsm.streams.info(TOPOLOGY.eventsStream, {
      subjects_filter: "sy.evt.acme.*.job",
    });
    for (const jobId of accepted.values()) {
      const count = s.state.subjects?.[`sy.evt.acme.${jobId}.job`];
      if (count !== 2) {
        await waitFor(
          `job ${jobId} to finish`,
          async () => {
            const one = await jsm.streams.info(TOPOLOGY.eventsStream, {
              subjects_filter: `sy.evt.acme.${jobId}.job`,
            });
            return one.state.subjects?.[`sy.evt.acme.${jobId}.job`] === 2;
          },
          { timeoutMs: 60_000, intervalMs: 250 },
        );
      }
    }
    // The new hub's projector catches up too: every job reads as done.
    for (const jobId of accepted.values()) {
      await waitFor(`GET ${jobId} to show done`, async () => {
        const res = await hub.request(`/jobs/${jobId}`, { token: ACME.token });
        return ((await res.json()) as { status: string }).status === "done";
      });
    }
  }, 150_000);
});
