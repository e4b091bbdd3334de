/**
 * What the repository says about itself. package.json's `engines.node` tells the truth: its lowest Node version is one every installed
 * package accepts (`npm ci` installs the dev dependencies too). `>=20` was below what
 * @nats-io/nuid (under the NATS client) and cookie (under Fastify) declare: Node ≥ 22.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

/** A package-lock entry; old packages give `engines` as a list of strings. */
interface LockPackage {
  readonly engines?: { readonly node?: string } | readonly string[];
}

async function git(...args: string[]): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(["git", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  return { code, out };
}

test("the lowest Node that engines allows satisfies every locked package's engines.node", async () => {
  const pkg = (await Bun.file(join(ROOT, "package.json")).json()) as {
    engines: { node: string };
  };
  const lowest = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(pkg.engines.node);
  expect(lowest).not.toBeNull();
  const version = `${lowest?.[1]}.${lowest?.[2] ?? 0}.${lowest?.[3] ?? 0}`;
  const lock = (await Bun.file(join(ROOT, "package-lock.json")).json()) as {
    packages: Record<string, LockPackage>;
  };
  expect(lock.packages[""]?.engines).toEqual(pkg.engines);
  const refusing = Object.entries(lock.packages)
    .filter(([path]) => path !== "")
    .flatMap(([path, p]) => {
      const range = p.engines && "node" in p.engines ? p.engines.node : undefined;
      return range && !Bun.semver.satisfies(version, range) ? [`${path}: ${range}`] : [];
    });
  expect(refusing).toEqual([]);
});

test("packed SDKs and the Python build folder are ignored; the CLI entry is executable in git", async () => {
  const ignored = await git(
    "check-ignore",
    "--no-index",
    "sdk/switchyard-sdk-0.1.0.tgz",
    "sdk/python/build/lib/x.py",
  );
  expect(ignored.out.trim().split("\n")).toEqual([
    "sdk/switchyard-sdk-0.1.0.tgz",
    "sdk/python/build/lib/x.py",
  ]);
  const entry = await git("ls-files", "--stage", "services/cli/main.ts");
  expect(entry.out.split(" ")[0]).toBe("100755");
});
