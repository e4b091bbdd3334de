import { describe, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { INDEX_CONSUMER } from "../../services/indexer/index.ts";
import { type ServiceName, startServices } from "../../services/runtime/run.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { parseConfig } from "../../shared/config/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { openIndexStore } from "../../shared/search/index.ts";
import { DEFAULT_CLIENTS, hubYaml, startHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "acme-token-0123456789abcdef";

// The search index is written by a service of its own (`switchyard serve indexer`), not by the
// projector's process: docs/architecture.md, "Indexer".

async function serve(nats: TestNats, services: readonly ServiceName[], extra = "") {
  const { logger, logs } = captureLogger();
  const config = parseConfig(hubYaml(nats.url, DEFAULT_CLIENTS, extra), {}, "indexer test");
  const running = await startServices(services, {
    config,
    logger,
    clock: systemClock,
    ids: randomIds,
  });
  return { running, logs, config };
}

const lines = (logs: string, text: string) =>
  logs
    .split("\n")
    .filter((line) => line.includes(text))
    .map((line) => JSON.parse(line) as { level: number; msg: string });

async function consumerNames(nats: TestNats): Promise<string[]> {
  const jsm = await jetstreamManager(nats.nc);
  const names: string[] = [];
  for await (const c of jsm.consumers.list(TOPOLOGY.eventsStream)) names.push(c.name);
  return names;
}

describe("the indexer service", () => {
  test("given a projector alone, when it runs, then no index durable exists: it writes no index", async () => {
    await using nats = await startNats();
    const projector = await serve(nats, ["projector"]);
    try {
      // Its partition's work starts once the claim is taken, not before serve returns.
      await waitFor("the projector to start", () => projector.logs().includes("projector started"));
      expect(await consumerNames(nats)).not.toContain(INDEX_CONSUMER);
      expect(projector.logs()).not.toContain("indexer started");
    } finally {
      await projector.running.stop();
    }
  });

  test("given two indexer processes, then one folds into the index and the other stands by", async () => {
    await using nats = await startNats();
    const first = await serve(nats, ["indexer"]);
    const second = await serve(nats, ["indexer"]);
    try {
      expect(lines(first.logs(), "indexer started")).toHaveLength(1);
      expect(await consumerNames(nats)).toContain(INDEX_CONSUMER);
      expect(lines(second.logs(), "indexer standing by")).toHaveLength(1);
      expect(second.logs()).not.toContain("indexer started");
      // A job run now (by a hub without an indexer of its own) is folded into the first one's index.
      await using hub = await startHub({ nats, services: ["ingress", "executor"] });
      const res = await hub.run({ request_id: "folded-1", route: "demo.echo", input: "x" }, TOKEN);
      const { job_id } = (await res.json()) as { job_id: string };
      const store = await openIndexStore(first.config.index);
      try {
        const page = await waitFor("the job done in the index", async () => {
          const p = await store.page({ filter: { statuses: ["done"] }, limit: 10 });
          return p.views.length > 0 ? p : undefined;
        });
        expect(page.views.map((v) => v.job_id)).toEqual([job_id]);
      } finally {
        await store.close();
      }
      expect(second.logs()).not.toContain("indexer started");
    } finally {
      await second.running.stop();
      await first.running.stop();
    }
  });

  test("given index.enabled false, then it says it has nothing to do: a warning alone, a note beside other services", async () => {
    await using nats = await startNats();
    const off = "index: { enabled: false }";
    const alone = await serve(nats, ["indexer"], off);
    const beside = await serve(nats, ["projector", "indexer"], off);
    try {
      expect(lines(alone.logs(), "nothing to do").map((l) => l.level)).toEqual([40]);
      expect(lines(beside.logs(), "nothing to do").map((l) => l.level)).toEqual([30]);
      expect(await consumerNames(nats)).not.toContain(INDEX_CONSUMER);
    } finally {
      await beside.running.stop();
      await alone.running.stop();
    }
  });
});
