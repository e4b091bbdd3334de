#!/usr/bin/env bun
/**
 * What GET /jobs/{id} costs for a job without a view, against one with: `bun
 * bench/get-without-view.ts`. GET reads a job that has no view yet from the event stream (three
 * last-by-subject reads from the stream leader, shared/jobs/reader.ts); the projector writes a
 * job's first view when it settles or at `projector.settle_wait` (docs/architecture.md,
 * "Projector"), so a client polling a job younger than that pays the stream read.
 *
 * A hub in this process (its services and the GET client share the process's CPU, alike in both
 * modes) and a private nats-server. Each mode posts GET_JOBS jobs whose callbacks a receiver holds,
 * so none settles; waits 2 s; then GETs each job once, 16 at a time. "views" sets the settle wait
 * to the linger (every job has its view by then), "stream" to 60 s (none has). Prints, per GET,
 * the CPU of this process and of nats-server (/proc, 10-ms ticks) and the wall time, for
 * GET_ROUNDS (2) rounds of both modes.
 */
import { generateWebhookSecret } from "../shared/webhooks/index.ts";
import { heldReceiver } from "../tests/helpers/held-receiver.ts";
import { startHub } from "../tests/helpers/hub.ts";
import { startNats } from "../tests/helpers/nats.ts";
import { cpuSec } from "./lib/common.ts";

const JOBS = Number(process.env.GET_JOBS ?? 2_000);
const ROUNDS = Number(process.env.GET_ROUNDS ?? 2);
const TOKEN = "get-bench-token-0123456789abcdef";

const receiver = heldReceiver();

async function measure(mode: "views" | "stream"): Promise<string> {
  receiver.hold();
  await using nats = await startNats();
  await using hub = await startHub({
    nats,
    clients: [
      { id: "acme", token: TOKEN, routes: ["demo.*"], callbackSecrets: [generateWebhookSecret()] },
    ],
    yaml: [
      'callbacks: { allow_cidrs: ["127.0.0.1/32"], timeout: 60s }',
      `projector: { linger: 100ms, settle_wait: ${mode === "views" ? "100ms" : "60s"} }`,
    ].join("\n"),
  });
  const callbackUrl = receiver.url;
  const ids: string[] = [];
  for (let i = 0; i < JOBS; i += 50) {
    const batch = Array.from({ length: Math.min(50, JOBS - i) }, (_, j) =>
      hub
        .run(
          { request_id: `get-${i + j}`, route: "demo.echo", input: "x", callback_url: callbackUrl },
          TOKEN,
        )
        .then((res) => res.json() as Promise<{ job_id: string }>),
    );
    for (const { job_id } of await Promise.all(batch)) ids.push(job_id);
  }
  await Bun.sleep(2_000);
  const viewed = (await hub.running.hub.jobs.get(`acme.${ids[0]}`)) !== null;
  const serverPid = nats.server().pid;
  const [self0, server0, t0] = [process.cpuUsage(), cpuSec(serverPid), performance.now()];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let id = ids[next++]; id !== undefined; id = ids[next++]) {
        const res = await hub.request(`/jobs/${id}`, { token: TOKEN });
        if (res.status !== 200) throw new Error(`GET answered ${res.status}`);
        await res.arrayBuffer();
      }
    }),
  );
  const wallUs = (performance.now() - t0) * 1_000;
  const self = process.cpuUsage(self0);
  const server = (cpuSec(serverPid) - server0) * 1e6;
  // The hub stops only once its callbacks are answered: the rest go through at once.
  receiver.open();
  const per = (us: number) => Math.round(us / ids.length);
  return `${mode} (first job has a view: ${viewed}): per GET, this process ${per(self.user + self.system)} µs, nats-server ${per(server)} µs, wall ${per(wallUs)} µs`;
}

for (let round = 1; round <= ROUNDS; round++) {
  for (const mode of ["views", "stream"] as const) {
    console.log(`round ${round}: ${await measure(mode)}`);
  }
}
receiver.stop();
process.exit(0);
