import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO = resolve(import.meta.dir, "../..");
const SDK_DIR = join(REPO, "sdk");
const BIN = join(REPO, "node_modules/.bin");

/** A command's outcome; `output` is stdout and stderr together, for failure messages. */
export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly output: string;
}

/** Runs a command to its end (no shell), with a time limit so a hang fails instead of blocking. */
export async function runCommand(
  cmd: readonly string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<Ran> {
  const proc = Bun.spawn([...cmd], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdout: "pipe",
    stderr: "pipe",
    timeout: options.timeoutMs ?? 120_000,
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, output: `${cmd.join(" ")} exited ${code}\n${stdout}\n${stderr}` };
}

/** A binary from node_modules/.bin; a missing one fails with the install hint. */
export function bin(name: "bun" | "deno" | "tsc"): string {
  const path = join(BIN, name);
  if (!Bun.file(path).size)
    throw new Error(`${path} is missing: run npm ci at the repository root`);
  return path;
}

export interface PackedSdk {
  /** Files in the tarball, relative to the package root. */
  readonly files: readonly string[];
  readonly tarball: string;
  /** A project that installed the tarball: `import "@switchyard/sdk"` resolves there. */
  readonly consumerDir: string;
  /** Removes the tarball and the consumer project. */
  cleanup(): Promise<void>;
}

async function pack(into: string): Promise<{ files: string[]; tarball: string }> {
  // npm pack runs the package's prepack script, which builds dist/ from a clean slate.
  const ran = await runCommand(["npm", "pack", "--json", "--pack-destination", into], {
    cwd: SDK_DIR,
    env: { npm_config_loglevel: "error", npm_config_update_notifier: "false" },
  });
  if (ran.code !== 0) throw new Error(ran.output);
  const [report] = JSON.parse(ran.stdout.slice(ran.stdout.indexOf("["))) as {
    filename: string;
    files: { path: string }[];
  }[];
  if (!report) throw new Error(`npm pack printed no report\n${ran.output}`);
  return { files: report.files.map((f) => f.path).sort(), tarball: join(into, report.filename) };
}

async function install(tarball: string, consumerDir: string): Promise<void> {
  await writeFile(
    join(consumerDir, "package.json"),
    JSON.stringify({ name: "sdk-consumer", private: true, type: "module" }),
  );
  const ran = await runCommand(
    ["npm", "install", "--offline", "--no-audit", "--no-fund", "--no-package-lock", tarball],
    { cwd: consumerDir, env: { npm_config_loglevel: "error" } },
  );
  if (ran.code !== 0) throw new Error(ran.output);
}

/** Packs sdk/ with npm (which builds it) and installs the tarball into a fresh project. */
export async function packedSdk(): Promise<PackedSdk> {
  const dir = await mkdtemp(join(tmpdir(), "switchyard-sdk-pack-"));
  const consumerDir = join(dir, "consumer");
  await Bun.write(join(consumerDir, ".keep"), "");
  const { files, tarball } = await pack(dir);
  await install(tarball, consumerDir);
  return { files, tarball, consumerDir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Fails with the command's whole output when it did not exit 0. */
export function expectSuccess(ran: Ran): void {
  if (ran.code !== 0) throw new Error(ran.output);
}
