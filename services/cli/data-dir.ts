/**
 * The data directory of `switchyard up` (./.data): a lock so that one hub at a time uses it (two
 * hubs sharing one store lose accepted jobs), and `hub.json`, where the running hub says which
 * NATS server it started, so CLI commands in the same folder talk to that server.
 */
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";

/** Where the data directory of `switchyard up` is: ./.data of the working directory. */
export const DATA_DIR = ".data";
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
  /** The API's base URL: the Client API, and the operator API under /admin/v1. */
  readonly api_url?: string;
  /** healthz, readyz and metrics (config key `monitoring`). */
  readonly monitoring_url?: string;
  /**
   * The token of the embedded nats-server (loopback, generated at each start): commands run in
   * this folder connect with it. hub.json is readable by its owner only.
   */
  readonly nats_token?: string;
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
  /** Tells two locks of one process apart (a re-read must find the very lock it judged stale). */
  readonly nonce: string;
}

/**
 * Paths this process holds. A lock naming our own pid that is not in here was left by an earlier
 * process with the same pid (a restarted container is pid 1 again): stale, not ours.
 */
const held = new Set<string>();

/** How deep takeovers of interrupted takeovers go before a person is asked to look. */
const MAX_TAKEOVER_DEPTH = 3;

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if (errno(err) === "ENOENT") return undefined;
    throw err;
  }
}

function parseLock(text: string): LockContent | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockContent>;
    return typeof value.pid === "number" && typeof value.host === "string"
      ? (value as LockContent)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A complete copy of `text` under a name of our own, to be linked or renamed into place. */
function writeTemp(path: string, text: string): string {
  const temp = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  writeFileSync(temp, text, { flag: "wx" });
  return temp;
}

/**
 * Creates `path` holding `text`, or returns false when it exists. link(2) of a complete temporary
 * file is atomic and fails on an existing name, so a reader never finds a lock half written (an
 * O_EXCL create followed by a write leaves an empty file another start would take as stale).
 */
function publish(path: string, text: string): boolean {
  const temp = writeTemp(path, text);
  try {
    linkSync(temp, path);
    return true;
  } catch (err) {
    if (errno(err) === "EEXIST") return false;
    throw err;
  } finally {
    rmSync(temp, { force: true });
  }
}

/** True while the lock's process may still use it. A lock that does not parse was never whole. */
function isLive(path: string, holder: LockContent | undefined): boolean {
  if (holder === undefined) return false;
  if (holder.host !== hostname()) return true; // another machine's process: cannot tell
  if (holder.pid === process.pid) return held.has(path);
  return processAlive(holder.pid);
}

type Taken = { readonly ok: true } | { readonly ok: false; readonly holder?: LockContent };

/**
 * Takes `path` for `text`, or names the live process that holds it. A stale lock is replaced
 * only by the holder of its claim (`<path>.takeover`, taken the same way), after reading the lock
 * again under the claim, and with one rename(2): the name never disappears on the way, so no
 * other start can slip in, and two starts that both found it stale cannot both take it (each
 * would otherwise delete the lock the other had just made). A start that finds the claim held by
 * a live process is refused: that process is taking the directory.
 */
function take(path: string, text: string, depth: number): Taken {
  for (;;) {
    if (publish(path, text)) {
      held.add(path);
      return { ok: true };
    }
    const seen = readText(path);
    if (seen === undefined) continue; // released between our link and our read
    const holder = parseLock(seen);
    if (isLive(path, holder)) return { ok: false, ...(holder ? { holder } : {}) };
    if (depth >= MAX_TAKEOVER_DEPTH) {
      throw new DataDirLockedError(
        dirname(path),
        `takeovers of ${basename(path)} interrupted ${depth} times; if no switchyard up runs here, delete the ${basename(path)}* files`,
      );
    }
    const claim = `${path}.takeover`;
    const claimed = take(claim, text, depth + 1);
    if (!claimed.ok) return claimed;
    try {
      if (readText(path) !== seen) continue; // replaced before our claim: judge the new one
      renameSync(writeTemp(path, text), path);
      held.add(path);
      return { ok: true };
    } finally {
      // Ours alone: replacing a claim needs its holder dead.
      held.delete(claim);
      rmSync(claim, { force: true });
    }
  }
}

/**
 * Takes the data directory for this process. A lock left by a process that no longer runs (a
 * SIGKILLed hub) is taken over; a live holder stops start-up with {@link DataDirLockedError}.
 * Of several starts at once, exactly one gets the directory.
 */
export function lockDataDir(dir: string, now: () => Date = () => new Date()): DataDirLock {
  mkdirSync(dir, { recursive: true });
  const lockPath = join(dir, LOCK_FILE);
  const hubPath = join(dir, HUB_FILE);
  const content: LockContent = {
    pid: process.pid,
    host: hostname(),
    started_at: now().toISOString(),
    nonce: randomBytes(8).toString("hex"),
  };
  const text = `${JSON.stringify(content)}\n`;
  const taken = take(lockPath, text, 0);
  if (!taken.ok) {
    const holder = taken.holder;
    const who = holder
      ? `pid ${holder.pid} on ${holder.host}, since ${holder.started_at}`
      : "unknown";
    throw new DataDirLockedError(dir, who);
  }
  return {
    dir,
    record(hub) {
      const record: HubRecord = { pid: process.pid, started_at: content.started_at, ...hub };
      // Owner only: it holds the embedded server's token. chmod covers a file an older hub made.
      writeFileSync(hubPath, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
      chmodSync(hubPath, 0o600);
    },
    release() {
      rmSync(hubPath, { force: true });
      if (readText(lockPath) === text) rmSync(lockPath, { force: true });
      held.delete(lockPath);
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
