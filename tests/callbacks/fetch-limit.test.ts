import { describe, expect, test } from "bun:test";
import { startServices } from "../../services/runtime/run.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { parseConfig } from "../../shared/config/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats } from "../helpers/nats.ts";
import { callbackYaml } from "./helpers.ts";

// Plain-HTTP callbacks go through Bun's fetch, which runs 256 requests at once per process unless
// BUN_CONFIG_MAX_HTTP_REQUESTS says otherwise: a higher callbacks.concurrency is told at start.
describe("callbacks.concurrency above what Bun's fetch runs at once", () => {
  for (const [concurrency, warned] of [
    [256, false],
    [1024, true],
  ] as const) {
    test(`${concurrency}: ${warned ? "a warning names the key and the variable" : "no warning"}`, async () => {
      await using nats = await startNats();
      const yaml = callbackYaml(nats.url).replace(
        "callbacks:\n",
        `callbacks:\n  concurrency: ${concurrency}\n`,
      );
      const { logger, logs } = captureLogger();
      const running = await startServices(["callback"], {
        config: parseConfig(yaml, {}),
        logger,
        clock: systemClock,
        ids: randomIds,
      });
      try {
        expect(logs()).toContain("callback service started");
        const warning = logs()
          .split("\n")
          .find((line) => line.includes("BUN_CONFIG_MAX_HTTP_REQUESTS"));
        if (warned) {
          expect(warning).toContain("callbacks.concurrency");
          expect(JSON.parse(warning ?? "{}")).toMatchObject({
            level: 40,
            concurrency: 1024,
            fetch_requests_at_once: 256,
          });
        } else expect(warning).toBeUndefined();
      } finally {
        await running.stop();
      }
    });
  }
});
