import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import { DEPLOY, named, readText, render } from "./k8s.ts";

interface Instruction {
  readonly op: string;
  readonly args: string;
}
interface Stage {
  readonly from: string;
  readonly name: string | undefined;
  readonly instructions: Instruction[];
}

/** Splits a Dockerfile into stages of instructions (comments dropped, continuations joined). */
export function parseDockerfile(text: string): Stage[] {
  const lines = text.split("\n").filter((l) => !/^\s*#/.test(l));
  const joined = lines.join("\n").replace(/\\\n/g, " ");
  const stages: Stage[] = [];
  for (const raw of joined.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const m = /^(\w+)\s+(.*)$/.exec(line);
    if (!m?.[1] || m[2] === undefined) throw new Error(`cannot parse Dockerfile line: ${line}`);
    const op = m[1].toUpperCase();
    if (op === "FROM") {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(m[2].trim());
      if (!from?.[1]) throw new Error(`bad FROM: ${line}`);
      stages.push({ from: from[1], name: from[2], instructions: [] });
    } else if (op !== "ARG" || stages.length > 0) {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`${op} before the first FROM`);
      stage.instructions.push({ op, args: m[2] });
    }
  }
  return stages;
}

const dockerfile = readText(join(DEPLOY, "Dockerfile"));
const stages = parseDockerfile(dockerfile);
const final = stages.at(-1);
const finalOps = (op: string) => (final?.instructions ?? []).filter((i) => i.op === op);

describe("deploy/Dockerfile", () => {
  test("multi-stage: a build stage compiles services/cli/main.ts with bun build --compile", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages.find((s) => s.name === "build");
    const runs = (build?.instructions ?? []).filter((i) => i.op === "RUN").map((i) => i.args);
    expect(runs.some((r) => /npm ci\b/.test(r))).toBe(true);
    const compile = runs.find((r) => r.includes("bun build"));
    expect(compile).toContain("--compile");
    expect(compile).toContain("services/cli/main.ts");
    expect(compile).toMatch(/--outfile \/out\/switchyard\b/);
  });

  test("every base image is pinned to a tag (never latest or untagged)", () => {
    for (const s of stages) {
      const tag = /^(?:[^/]+\/)*[^/:@]+:([\w][\w.-]*)$/.exec(s.from)?.[1];
      expect(tag).toBeDefined();
      expect(tag).not.toBe("latest");
    }
  });

  test("the runtime stage is minimal, holds only the binary, runs as the non-root user the manifests use", () => {
    expect(final?.from).toMatch(/^gcr\.io\/distroless\/cc-debian12:nonroot$/);
    expect(finalOps("RUN")).toEqual([]);
    const copies = finalOps("COPY").map((c) => c.args);
    expect(copies).toEqual([expect.stringContaining("--from=build")]);
    expect(copies[0]).toMatch(/\/out\/switchyard \/usr\/local\/bin\/switchyard$/);
    const user = finalOps("USER").at(-1)?.args ?? "";
    expect(user).toMatch(/^\d+:\d+$/);
    const [uid, gid] = user.split(":").map(Number);
    expect(uid).toBeGreaterThan(0);
    const pod = named<IDeployment>(render("base"), "Deployment", "switchyard-ingress").spec
      ?.template.spec;
    expect(pod?.securityContext?.runAsUser).toBe(uid);
    expect(pod?.securityContext?.runAsGroup).toBe(gid);
  });

  test("one image, the service chosen by argument: exec-form ENTRYPOINT, no default service", () => {
    const entry = finalOps("ENTRYPOINT");
    expect(entry.length).toBe(1);
    expect(JSON.parse(entry[0]?.args ?? "null")).toEqual(["/usr/local/bin/switchyard"]);
    expect(finalOps("CMD")).toEqual([]);
    const exposed = finalOps("EXPOSE").flatMap((e) => e.args.split(/\s+/));
    expect(exposed.sort()).toEqual(["8080", "9090"]);
    const env = finalOps("ENV")
      .map((e) => e.args)
      .join(" ");
    expect(env).toContain("SWITCHYARD_CONFIG=/etc/switchyard/switchyard.yaml");
    expect(env).toContain("NODE_ENV=production");
  });

  test("the build context allow-list (Dockerfile.dockerignore) lets in what the build copies", () => {
    const ignore = readText(join(DEPLOY, "Dockerfile.dockerignore"))
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    expect(ignore[0]).toBe("*");
    for (const needed of [
      "package.json",
      "package-lock.json",
      "tsconfig.json",
      "services/",
      "shared/",
    ]) {
      expect(ignore).toContain(`!${needed}`);
    }
    expect(ignore).toContain("**/node_modules");
  });

  test("the parser reads what it claims (self-test)", () => {
    const parsed = parseDockerfile(
      "# c\nARG X=1\nFROM a:1 AS one\nRUN a \\\n  b\nFROM b:2\nUSER 1:2\n",
    );
    expect(parsed.map((s) => [s.from, s.name])).toEqual([
      ["a:1", "one"],
      ["b:2", undefined],
    ]);
    expect(parsed[0]?.instructions).toEqual([{ op: "RUN", args: "a    b" }]);
  });
});
