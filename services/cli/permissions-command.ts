/**
 * `switchyard permissions [--partitions P] [--out file]`: the NATS users and permissions of a hub
 * of P partitions (services/cli/permissions/). P is the flag, else nats.partitions of the config
 * file, else 1 (that key's default): the file must name exactly the hub's streams and buckets,
 * and the config file is where the hub's count is written before the store exists.
 */
import { existsSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { ConfigError, parseConfig } from "../../shared/config/index.ts";
import { MAX_PARTITIONS } from "../../shared/jobs/index.ts";
import { UsageError } from "./args.ts";
import { configPath, type Env } from "./connect.ts";
import { PERMISSIONS_USAGE } from "./options.ts";
import { natsPermissions } from "./permissions/render.ts";

/** The most a Kubernetes ConfigMap holds (the file grows by about 6.7 kB per partition). */
const CONFIG_MAP_BYTES = 1024 * 1024;

export interface PermissionsRequest {
  readonly partitions?: string | undefined;
  readonly out?: string | undefined;
}

export interface PermissionsIo {
  readonly env: Env;
  stdout(text: string): void;
  stderr(text: string): void;
}

/** --partitions as given: a whole number from 1 to MAX_PARTITIONS, else a usage error naming it. */
function partitionsFlag(text: string): number {
  const p = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(p) || p < 1 || p > MAX_PARTITIONS) {
    throw new UsageError(
      `--partitions must be a whole number from 1 to ${MAX_PARTITIONS}; got '${text}'`,
      PERMISSIONS_USAGE,
    );
  }
  return p;
}

/**
 * nats.partitions of the config file, read without the rest of the file (which may name secrets
 * this machine does not hold) and checked as the hub checks it (a ConfigError naming the key);
 * undefined without a config file.
 */
function partitionsOfConfigFile(env: Env): number | undefined {
  const path = configPath(env);
  if (!existsSync(path)) return undefined;
  let doc: { nats?: { partitions?: unknown } } | null;
  try {
    doc = parseYaml(readFileSync(path, "utf8"));
  } catch (err) {
    throw new ConfigError(path, [{ key: "(file)", message: (err as Error).message }]);
  }
  const partitions = doc?.nats?.partitions;
  const nats = partitions === undefined ? {} : { partitions };
  return parseConfig(JSON.stringify({ nats }), {}, path).nats.partitions;
}

/** The partition count to write for, and where it came from (said on stderr). */
function resolvePartitions(request: PermissionsRequest, env: Env): { p: number; from: string } {
  if (request.partitions !== undefined) {
    return { p: partitionsFlag(request.partitions), from: "--partitions" };
  }
  const fromFile = partitionsOfConfigFile(env);
  if (fromFile !== undefined) return { p: fromFile, from: `nats.partitions of ${configPath(env)}` };
  return { p: 1, from: "no --partitions and no config file: nats.partitions's default" };
}

export async function runPermissionsCommand(
  request: PermissionsRequest,
  io: PermissionsIo,
): Promise<number> {
  const { p, from } = resolvePartitions(request, io.env);
  const text = natsPermissions(p);
  if (Buffer.byteLength(text) > CONFIG_MAP_BYTES) {
    io.stderr(
      `note: ${Buffer.byteLength(text)} bytes, more than a Kubernetes ConfigMap or Secret holds (1 MiB): ship it another way (an image or a volume)\n`,
    );
  }
  if (request.out === undefined) {
    io.stdout(text);
    io.stderr(`NATS users for a hub of ${p} partition${p === 1 ? "" : "s"} (${from})\n`);
    return 0;
  }
  await writeFile(request.out, text);
  io.stderr(
    `wrote ${request.out}: NATS users for a hub of ${p} partition${p === 1 ? "" : "s"} (${from})\n`,
  );
  return 0;
}
