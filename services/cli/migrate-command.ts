import { systemClock } from "../../shared/clock/index.ts";
import type { Config } from "../../shared/config/index.ts";
import { openDispatchIndex } from "../../shared/dispatch/index.ts";
import { connectHub } from "../../shared/hub/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { type Env, loadConfig } from "./connect.ts";

/**
 * `switchyard migrate`: brings a store written by 0.1 to this version (docs/operations.md). Unlike
 * the other commands it needs the hub's config (it resumes work on the hub's routes) and may
 * create what the new version expects.
 */
export async function runMigrate(env: Env, stdout: (text: string) => void): Promise<number> {
  const config = (await loadConfig(env, true)) as Config;
  const logger = createLogger({
    level: env.SWITCHYARD_LOG_LEVEL ?? config.log.level,
    service: "migrate",
  });
  const hub = await connectHub(config, logger, "migrate");
  try {
    const { migrateStore } = await import("../migrate/index.ts");
    const report = await migrateStore({
      js: hub.js,
      jsm: hub.jsm,
      layout: hub.layout,
      meta: hub.meta,
      dispatch: await openDispatchIndex(hub.nc, {
        replicas: config.nats.replicas,
        ttlMs: 24 * 3_600_000,
      }),
      config,
      clock: systemClock,
      ids: randomIds,
      progress: process.stderr,
    });
    if (report.from === report.to || report.from === "fresh") {
      stdout(`store version ${report.to}: nothing to migrate\n`);
      return 0;
    }
    stdout(
      [
        `migrated the store from version ${report.from} to ${report.to}:`,
        `  deadline timers for open jobs: ${report.deadlineTimers}`,
        `  HTTP attempts to resend: ${report.resumedHttpAttempts}`,
        `  redelivery requests queued: ${report.callbackWakeups}`,
        `  old consumers removed: ${report.removedConsumers.join(", ") || "none"}`,
        "",
      ].join("\n"),
    );
    return 0;
  } finally {
    await hub.drain();
  }
}
