/**
 * The data directory of `switchyard up` (./.data): a lock so that one hub at a time uses it (two
 * hubs sharing one store lose accepted jobs), and `hub.json`, where the running hub says which
 * NATS server it started, so CLI commands in the same folder talk to that server.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";

export const LOCK_FILE = "switchyard.lock";
export const HUB_FILE = "hub.json";

/** What `up` records for the commands run beside it. */
export interface HubRecord {
  /** The `switchyard up` process. */
  readonly pid: number;
  readonly nats_url: string;
  /** The embedded nats-server, when `up` started one. */
  readonly nats_pid?: number;
  readonly store_dir?: string;
  readonly api_url?: string;
  readonly admin_url?: string;
  readonly started_at: string;
}

/** Another process holds the data directory. */
export class DataDirLockedError extends Error {
  readonly code = "data_dir_locked";
  constructor(dir: string, holder: string) {
    super(
      `${dir} is in use by another switchyard up (${holder}). One hub per data directory: stop that one first, or start this one in another folder. Two hubs on one store lose accepted jobs.`,
    );
    this.name = "DataDirLockedError";
  }
}

/** True when a process with this pid runs (a zombie, dead but not yet reaped, does not). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    // Linux: the state follows the command name in parentheses; Z is a zombie.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no /proc (macOS): signal 0 succeeded, so it exists
  }
}

/** The process's command line (Linux /proc), to tell our server from a recycled pid. */
export function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return undefined;
  }
}

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch {
    return undefined;
  }
}

export interface DataDirLock {
  readonly dir: string;
  /** Records the running hub for CLI commands (hub.json). */
  record(hub: Omit<HubRecord, "pid" | "started_at">): void;
  /** Removes hub.json and the lock. */
  release(): void;
}

interface LockContent {
  readonly pid: number;
  readonly host: string;
  readonly started_at: string;
}

function tryCreate(path: string, content: LockContent): boolean {
  try {
    const fd = openSync(path, "wx");
    writeFileSync(fd, `${JSON.stringify(content)}\n`);
    closeSync(fd);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
}

/**
 * Takes the data directory for this process. A lock left by a process that no longer runs (a
 * SIGKILLed hub) is taken over; a live holder stops start-up with {@link DataDirLockedError}.
 */
export function lockDataDir(dir: string, now: () => Date = () => new Date()): DataDirLock {
  mkdirSync(dir, { recursive: true });
  const lockPath = join(dir, LOCK_FILE);
  const hubPath = join(dir, HUB_FILE);
  const content: LockContent = {
    pid: process.pid,
    host: hostname(),
    started_at: now().toISOString(),
  };
  for (let attempt = 0; !tryCreate(lockPath, content); attempt++) {
    const holder = readJson<LockContent>(lockPath);
    const alive = holder !== undefined && (holder.host !== hostname() || processAlive(holder.pid));
    if (alive || attempt > 0) {
      const who = holder
        ? `pid ${holder.pid} on ${holder.host}, since ${holder.started_at}`
        : "unknown";
      throw new DataDirLockedError(dir, who);
    }
    rmSync(lockPath, { force: true }); // stale: its process is gone
  }
  const started = content.started_at;
  return {
    dir,
    record(hub) {
      const record: HubRecord = { pid: process.pid, started_at: started, ...hub };
      writeFileSync(hubPath, `${JSON.stringify(record, null, 2)}\n`);
    },
    release() {
      rmSync(hubPath, { force: true });
      const holder = readJson<LockContent>(lockPath);
      if (holder?.pid === process.pid) rmSync(lockPath, { force: true });
    },
  };
}

/** The hub recorded in `dir`, if its `up` process still runs. */
export function runningHub(dir: string): HubRecord | undefined {
  const record = readJson<HubRecord>(join(dir, HUB_FILE));
  return record && processAlive(record.pid) ? record : undefined;
}

/**
 * A nats-server left running on this store by a hub that died without stopping it (where the
 * parent-death signal is not available). Returns its pid if it is still ours, so it can be stopped
 * before a second server opens the same store.
 */
export function orphanedServer(dir: string): number | undefined {
  const record = readJson<HubRecord>(join(dir, HUB_FILE));
  if (!record?.nats_pid || !record.store_dir || processAlive(record.pid)) return undefined;
  const cmd = commandLine(record.nats_pid);
  return cmd?.includes("nats-server") && cmd.includes(record.store_dir)
    ? record.nats_pid
    : undefined;
}
