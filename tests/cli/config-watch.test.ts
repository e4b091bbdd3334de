import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConfigWatch, stampFiles, watchConfig } from "../../services/cli/config-watch.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { waitFor } from "../helpers/wait.ts";

const silent = createLogger({ level: "silent", service: "test" });
const YAML = "routes:\n  - key: a.echo\n    executor: { kind: builtin, name: echo }\n";

describe("config watch: a change made while the services start", () => {
  let dir = "";
  let watch: ConfigWatch | undefined;
  afterEach(() => {
    watch?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const setUp = () => {
    dir = mkdtempSync(join(tmpdir(), "switchyard-config-watch-"));
    const path = join(dir, "switchyard.yaml");
    writeFileSync(path, YAML);
    const applied: string[] = [];
    const deps = {
      path,
      load: async () => parseConfig(YAML, {}),
      apply: async (config: Config) => applied.push(config.routes[0]?.key ?? ""),
      logger: silent,
      intervalMs: 60_000,
    };
    return { path, applied, deps };
  };

  test("is reloaded when the watch starts: the file differs from when it was read", async () => {
    const { path, applied, deps } = setUp();
    const stamps = stampFiles([path]);
    // The file changes after it was read and before the watch starts (the services were starting).
    const later = new Date(Date.now() + 5_000);
    utimesSync(path, later, later);
    watch = watchConfig(deps, stamps);
    // The poll interval is a minute: only the start-up comparison can reload this soon.
    await waitFor("the reload", () => applied.length === 1);
    expect(applied).toEqual(["a.echo"]);
  });

  test("is not reloaded when nothing changed since it was read", async () => {
    const { path, applied, deps } = setUp();
    watch = watchConfig(deps, stampFiles([path]));
    // Settled reloads run 300 ms after a change; twice that with nothing applied means none came.
    await Bun.sleep(600);
    expect(applied).toEqual([]);
  });
});
