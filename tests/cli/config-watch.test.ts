import { afterEach, describe, expect, test } from "bun:test";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConfigWatch, stampFiles, watchConfig } from "../../services/cli/config-watch.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { waitFor } from "../helpers/wait.ts";

const silent = createLogger({ level: "silent", service: "test" });
const yamlWith = (key: string) =>
  `routes:\n  - key: ${key}\n    executor: { kind: builtin, name: echo }\n`;
const YAML = yamlWith("a.echo");

// The backstop is a minute in every test here but the last: a reload within the test's few seconds
// came from the start-up comparison or from the file's watch.
const BACKSTOP_MS = 60_000;

let dir = "";
let watch: ConfigWatch | undefined;
afterEach(() => {
  watch?.stop();
  watch = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A config file at `path` (made by the caller); each reload applies its first route's key. */
function watched(path: string) {
  const applied: string[] = [];
  const deps = {
    path,
    load: async () => parseConfig(readFileSync(path, "utf8"), {}),
    apply: async (config: Config) => applied.push(config.routes[0]?.key ?? ""),
    logger: silent,
    backstopMs: BACKSTOP_MS,
  };
  return { applied, deps };
}

/** Starts watching `path` and `also` as they are now; returns the keys its reloads apply. */
function watching(path: string, also: readonly string[] = [], backstopMs = BACKSTOP_MS) {
  const { applied, deps } = watched(path);
  watch = watchConfig({ ...deps, backstopMs }, stampFiles([path, ...also]));
  return applied;
}

function plainFile() {
  dir = mkdtempSync(join(tmpdir(), "switchyard-config-watch-"));
  const path = join(dir, "switchyard.yaml");
  writeFileSync(path, YAML);
  return path;
}

describe("config watch: a change made while the services start", () => {
  test("is reloaded when the watch starts: the file differs from when it was read", async () => {
    const path = plainFile();
    const { applied, deps } = watched(path);
    const stamps = stampFiles([path]);
    // The file changes after it was read and before the watch starts (the services were starting).
    const later = new Date(Date.now() + 5_000);
    utimesSync(path, later, later);
    watch = watchConfig(deps, stamps);
    await waitFor("the reload", () => applied.length === 1);
    expect(applied).toEqual(["a.echo"]);
  });

  test("is not reloaded when nothing changed since it was read", async () => {
    const path = plainFile();
    const applied = watching(path);
    // Settled reloads run 300 ms after a change; twice that with nothing applied means none came.
    await Bun.sleep(600);
    expect(applied).toEqual([]);
  });
});

describe("config watch: changes while running, seen by the file's watch", () => {
  test("an edit in place is reloaded", async () => {
    const path = plainFile();
    const applied = watching(path);
    writeFileSync(path, yamlWith("b.echo"));
    await waitFor("the reload", () => applied.length === 1);
    expect(applied).toEqual(["b.echo"]);
  });

  test("an editor's save (a new file renamed over the old one) is reloaded, and so is the next edit", async () => {
    const path = plainFile();
    const applied = watching(path);
    writeFileSync(join(dir, ".switchyard.yaml.swp"), yamlWith("c.echo"));
    renameSync(join(dir, ".switchyard.yaml.swp"), path);
    await waitFor("the reload", () => applied.length === 1);
    // The watched file was replaced: the watch follows the path to the new one.
    writeFileSync(path, yamlWith("c2.echo"));
    await waitFor("the second reload", () => applied.length === 2);
    expect(applied).toEqual(["c.echo", "c2.echo"]);
  });

  test("a Kubernetes ConfigMap update (the ..data symlink swapped) is reloaded", async () => {
    dir = mkdtempSync(join(tmpdir(), "switchyard-config-watch-"));
    // The layout kubelet mounts: the file is a link through ..data to a timestamped directory.
    mkdirSync(join(dir, "..2026_11_29_01"));
    writeFileSync(join(dir, "..2026_11_29_01", "switchyard.yaml"), YAML);
    symlinkSync("..2026_11_29_01", join(dir, "..data"));
    symlinkSync("..data/switchyard.yaml", join(dir, "switchyard.yaml"));
    const path = join(dir, "switchyard.yaml");
    const applied = watching(path);
    // An update as kubelet writes it: a new directory, a new link, renamed over ..data.
    mkdirSync(join(dir, "..2026_11_29_02"));
    writeFileSync(join(dir, "..2026_11_29_02", "switchyard.yaml"), yamlWith("d.echo"));
    symlinkSync("..2026_11_29_02", join(dir, "..data_tmp"));
    renameSync(join(dir, "..data_tmp"), join(dir, "..data"));
    rmSync(join(dir, "..2026_11_29_01"), { recursive: true });
    await waitFor("the reload", () => applied.length === 1);
    expect(applied).toEqual(["d.echo"]);
  });

  test("a referenced file in another directory is watched there", async () => {
    const path = plainFile();
    mkdirSync(join(dir, "secrets"));
    const secret = join(dir, "secrets", "token");
    writeFileSync(secret, "one");
    const applied = watching(path, [secret]);
    writeFileSync(secret, "two");
    await waitFor("the reload", () => applied.length === 1);
    expect(applied).toEqual(["a.echo"]);
  });

  test("other files of the directory changing reload nothing", async () => {
    const path = plainFile();
    const applied = watching(path);
    // The search index's files can sit beside the config: their writes are none of its business.
    for (let i = 0; i < 200; i++) writeFileSync(join(dir, "index.sqlite-wal"), `write ${i}`);
    await Bun.sleep(600);
    expect(applied).toEqual([]);
    writeFileSync(path, yamlWith("e.echo"));
    await waitFor("the reload", () => applied.length === 1);
    expect(applied).toEqual(["e.echo"]);
  });

  test("a file missing when the watch starts is compared by the backstop, and watched once it exists", async () => {
    const path = plainFile();
    const missing = join(dir, "secrets", "token");
    const applied = watching(path, [missing], 200);
    mkdirSync(join(dir, "secrets"));
    writeFileSync(missing, "now it exists");
    await waitFor("the reload from the backstop", () => applied.length === 1);
    // Watched now: an edit reloads (the backstop sees it too, so this shows no regression only).
    writeFileSync(missing, "changed");
    await waitFor("the second reload", () => applied.length === 2);
    expect(applied).toEqual(["a.echo", "a.echo"]);
  });
});
