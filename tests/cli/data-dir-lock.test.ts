import { afterAll, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { DataDirLockedError, LOCK_FILE, lockDataDir } from "../../services/cli/data-dir.ts";

// The data directory of `switchyard up` is one hub's: of several starts at once exactly one gets
// it, whether the directory is free, holds the lock of a hub that was SIGKILLed, or holds a
// takeover that was itself interrupted. Real processes race (fixtures/lock-racer.ts), released
// together by one line on their stdin.

const RACER = join(import.meta.dir, "fixtures/lock-racer.ts");
const dirs: string[] = [];
const children: ReturnType<typeof Bun.spawn>[] = [];

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "switchyard-lock-"));
  dirs.push(dir);
  return dir;
}

/** The pid of a process that has exited: what a SIGKILLed hub leaves in its lock. */
async function deadPid(): Promise<number> {
  const proc = Bun.spawn(["true"]);
  await proc.exited;
  return proc.pid;
}

/** The pid of a process that runs until the tests end. */
function livePid(): number {
  const proc = Bun.spawn(["sleep", "600"]);
  children.push(proc);
  return proc.pid;
}

const lockText = (pid: number) =>
  `${JSON.stringify({ pid, host: hostname(), started_at: "2026-01-01T00:00:00.000Z", nonce: `n${pid}` })}\n`;

/** Reads a process's stdout line by line. */
function lines(stream: ReadableStream<Uint8Array>): () => Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  return async () => {
    for (;;) {
      const at = buffered.indexOf("\n");
      if (at >= 0) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + 1);
        return line;
      }
      const { value, done } = await reader.read();
      if (done) return buffered;
      buffered += decoder.decode(value, { stream: true });
    }
  };
}

async function race(dir: string, count: number) {
  const racers = Array.from({ length: count }, () =>
    Bun.spawn([process.execPath, RACER, dir], { stdin: "pipe", stdout: "pipe", stderr: "inherit" }),
  );
  children.push(...racers);
  const next = racers.map((racer) => lines(racer.stdout));
  expect(await Promise.all(next.map((line) => line()))).toEqual(racers.map(() => "ready"));
  for (const racer of racers) {
    racer.stdin.write("go\n");
    racer.stdin.flush();
  }
  const results = await Promise.all(next.map((line) => line()));
  const lock = JSON.parse(await readFile(join(dir, LOCK_FILE), "utf8")) as { pid: number };
  const files = await readdir(dir);
  for (const racer of racers) {
    racer.stdin.write("exit\n");
    racer.stdin.end();
  }
  expect(await Promise.all(racers.map((racer) => racer.exited))).toEqual(racers.map(() => 0));
  return { results, lock, files };
}

describe("several starts at once: exactly one gets the data directory", () => {
  const scenarios: [string, (dir: string) => Promise<void>][] = [
    ["a free directory", async () => {}],
    [
      "the lock of a hub that was SIGKILLed",
      async (dir) => writeFile(join(dir, LOCK_FILE), lockText(await deadPid())),
    ],
    [
      "a stale lock whose takeover was interrupted",
      async (dir) => {
        await writeFile(join(dir, LOCK_FILE), lockText(await deadPid()));
        await writeFile(join(dir, `${LOCK_FILE}.takeover`), lockText(await deadPid()));
      },
    ],
  ];
  for (const [name, prepare] of scenarios) {
    test(name, async () => {
      for (let round = 0; round < 4; round++) {
        const dir = await folder();
        await prepare(dir);
        const { results, lock, files } = await race(dir, 6);
        const winners = results.filter((r) => r.startsWith("won "));
        expect({ round, winners: winners.length }).toEqual({ round, winners: 1 });
        expect(winners[0]).toBe(`won ${lock.pid}`);
        for (const r of results.filter((x) => !x.startsWith("won "))) {
          expect(r).toStartWith("lost ");
          expect(r).toContain("in use by another switchyard up");
        }
        expect(files).toEqual([LOCK_FILE]); // no temporary file, no claim left behind
      }
    });
  }
});

describe("who holds the lock", () => {
  test("a live holder is refused by name, and its lock is left alone", async () => {
    const dir = await folder();
    const pid = livePid();
    await writeFile(join(dir, LOCK_FILE), lockText(pid));
    expect(() => lockDataDir(dir)).toThrow(DataDirLockedError);
    expect(() => lockDataDir(dir)).toThrow(`pid ${pid} on ${hostname()}`);
    expect(await readFile(join(dir, LOCK_FILE), "utf8")).toBe(lockText(pid));
  });

  test("a takeover in progress (its claim held by a live process) refuses the others", async () => {
    const dir = await folder();
    const claimant = livePid();
    await writeFile(join(dir, LOCK_FILE), lockText(await deadPid()));
    await writeFile(join(dir, `${LOCK_FILE}.takeover`), lockText(claimant));
    expect(() => lockDataDir(dir)).toThrow(`pid ${claimant}`);
    expect((await readdir(dir)).sort()).toEqual([LOCK_FILE, `${LOCK_FILE}.takeover`]);
  });

  test("our own pid in a lock we do not hold is a recycled pid's (a restarted container)", async () => {
    const dir = await folder();
    await writeFile(join(dir, LOCK_FILE), lockText(process.pid));
    const lock = lockDataDir(dir);
    // Held now: a second start in this process is refused like any other.
    expect(() => lockDataDir(dir)).toThrow(`pid ${process.pid}`);
    lock.release();
    expect(await readdir(dir)).toEqual([]);
    lockDataDir(dir).release();
  });

  test("an empty or torn lock file is debris (a lock is only ever written whole)", async () => {
    for (const debris of ["", '{"pid": 12'] as const) {
      const dir = await folder();
      await writeFile(join(dir, LOCK_FILE), debris);
      const lock = lockDataDir(dir);
      const now = JSON.parse(await readFile(join(dir, LOCK_FILE), "utf8")) as { pid: number };
      expect(now.pid).toBe(process.pid);
      lock.release();
    }
  });
});
