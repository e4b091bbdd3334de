/**
 * A holder frozen past its member record's TTL (SIGSTOP, as a long GC pause or a stalled VM)
 * stands down before another member takes its partitions: once the other holds a partition, the
 * frozen one, woken, never reports holding it again, and stands down on its own.
 */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import {
  createPartitionClaims,
  LEASE_TTL_MS,
  openClaimsBucket,
  openLeaseBucket,
} from "../../shared/lease/index.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const MEMBER = join(import.meta.dir, "fixtures/claims-member.ts");
const P = 4;
const children: ReturnType<typeof Bun.spawn>[] = [];
afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

/** Collects a child's stdout lines as they come. */
function collect(stream: ReadableStream<Uint8Array>): string[] {
  const lines: string[] = [];
  const decoder = new TextDecoder();
  void (async () => {
    let rest = "";
    for await (const chunk of stream) {
      const parts = (rest + decoder.decode(chunk, { stream: true })).split("\n");
      rest = parts.pop() ?? "";
      lines.push(...parts);
    }
  })();
  return lines;
}

/** The partitions of each "<ms> holding <p,…>" line, with its time. */
const samples = (lines: readonly string[]) =>
  lines
    .map((line) => /^(\d+) holding ([\d,]+)$/.exec(line))
    .filter((m) => m !== null)
    .map((m) => ({ at: Number(m[1]), held: (m[2] ?? "").split(",").map(Number) }));

test("a frozen holder stands down before another member takes its partitions", async () => {
  await using nats = await startNats();
  const child = Bun.spawn([process.execPath, MEMBER, nats.url, String(P)], {
    stdout: "pipe",
    stderr: "inherit",
  });
  children.push(child);
  const out = collect(child.stdout);
  await waitFor("the child to hold all 4", () => samples(out).at(-1)?.held.length === P);

  const nc = await connect({ servers: nats.url });
  const b = createPartitionClaims({
    leases: await openLeaseBucket(nc, { replicas: 1 }),
    jsm: await jetstreamManager(nc),
    claims: await openClaimsBucket(nc, { replicas: 1 }),
    groups: { counter: P },
    holder: "b",
    logger: captureLogger().logger,
  });
  const leases = [...Array(P).keys()].map((p) => b.lease("counter", p));
  for (const lease of leases)
    await lease.start({ lead: async () => {}, standDown: async () => {} });
  /** When b first held each partition after the child was frozen. */
  const takenAt = new Map<number, number>();
  let frozen = false;
  const sampler = setInterval(() => {
    for (const [p, lease] of leases.entries()) {
      if (frozen && lease.holding() && !takenAt.has(p)) takenAt.set(p, Date.now());
    }
  }, 5);
  await waitFor("b and the child to hold 2 each", () => b.held("counter").length === 2, {
    timeoutMs: 15_000,
  });
  await waitFor("the child to hold the other 2", () => samples(out).at(-1)?.held.length === 2);
  const ofChild = samples(out).at(-1)?.held ?? [];

  child.kill("SIGSTOP");
  frozen = true;
  await waitFor("b to take the frozen child's partitions", () => b.held("counter").length === P, {
    timeoutMs: LEASE_TTL_MS + 3_000,
  });
  child.kill("SIGCONT");
  await waitFor("the woken child to stand down", () =>
    ofChild.every((p) => out.includes(`standDown ${p}`)),
  );
  clearInterval(sampler);

  for (const p of ofChild) {
    const taken = takenAt.get(p) as number;
    expect(taken).toBeGreaterThan(0);
    const childHeldAfter = samples(out).filter((s) => s.held.includes(p) && s.at >= taken);
    expect(childHeldAfter).toEqual([]);
  }
  // Woken, it runs on: it joins again as a new member and gets a fair share back.
  await waitFor("b to be back at 2", () => b.held("counter").length === 2, { timeoutMs: 15_000 });
  await b.stop();
  await nc.close();
  child.kill("SIGKILL");
}, 60_000);
