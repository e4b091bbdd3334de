import { once } from "node:events";
import { createWriteStream, type WriteStream } from "node:fs";
import { connect } from "@nats-io/transport-node";
import { identityOptions } from "../../shared/nats/index.ts";
import {
  type CompileInput,
  type CompileOptions,
  type CompileResult,
  compileTools,
  DEFAULT_BUDGETS,
  type Diagnostic,
  DiagnosticSink,
  type InputSpec,
  loadInputs,
  type OutputFormat,
  openToolSetStore,
  parseInputArg,
  prepareInputs,
  readCompileOutput,
  ToolSetRejected,
  toolSetStats,
  validateCompileResult,
  validateToolDefinition,
  type WriteChunk,
  writeCompileOutput,
} from "../../shared/tools/index.ts";
import { commandNats } from "./connect.ts";
import { exitWhenFlushed } from "./exit.ts";

export interface ToolsIo {
  /** Writes to standard output; `false` means "wait for drain" (process.stdout.write). */
  stdout(s: string): unknown;
  stderr(s: string): unknown;
  env: Record<string, string | undefined>;
  /** Progress and ETA are shown on a terminal only. */
  stderrIsTTY?: boolean;
}

const USAGE = `usage:
  switchyard tools compile <inputs…> [--overlay file…] [--mcp-stdio "cmd args"] [--mcp-http url]
        [-o out] [--ndjson] [--max-tool-bytes N] [--max-output-bytes N] [--inline-refs[=N]]
  switchyard tools compile <openapi> --overlay file… --emit-document [-o out.json]
  switchyard tools validate <file>        (a compileResult or NDJSON output, one tool definition, or an array of them)
  switchyard tools stats <file>           (tool count, risk mix, estimated tokens, largest tools)
  switchyard tools publish <name> <file>  (stores the set in NATS, any size; the hub's NATS as for every command)
inputs: OpenAPI 3.0/3.1, Swagger 2.0, Overlay 1.0/1.1, MCP tools/list, manual tools (JSON/YAML), SDK modules (.ts/.js);
prefix openapi:, overlay:, mcp:, manual: or sdk: to force the kind.
budgets (bytes of compact JSON, 0 = no limit): --max-tool-bytes (default ${DEFAULT_BUDGETS.maxToolBytes}),
--max-output-bytes (default ${DEFAULT_BUDGETS.maxOutputBytes}); --inline-refs inlines $defs up to N bytes (default: the tool budget).
`;

class UsageError extends Error {}

function formatDiagnostic(d: Diagnostic): string {
  return `${d.severity}: ${d.code} at ${d.path}: ${d.message}${d.suggestion ? ` (${d.suggestion})` : ""}\n`;
}

function byteCount(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new UsageError(`${flag} takes a whole number of bytes`);
  return n;
}

interface CompileArgs {
  specs: InputSpec[];
  overlays: string[];
  out?: string;
  format: OutputFormat;
  options: CompileOptions;
  emitDocument: boolean;
}

function parseCompileArgs(args: string[]): CompileArgs {
  const a: CompileArgs = {
    specs: [],
    overlays: [],
    format: "json",
    options: {},
    emitDocument: false,
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const next = () => {
      const v = args[++i];
      if (v === undefined) throw new UsageError(`${arg} needs a value`);
      return v;
    };
    if (arg === "--overlay") a.overlays.push(next());
    else if (arg === "-o" || arg === "--out") a.out = next();
    else if (arg === "--ndjson") a.format = "ndjson";
    else if (arg === "--emit-document") a.emitDocument = true;
    else if (arg === "--max-tool-bytes") a.options.maxToolBytes = byteCount(arg, next());
    else if (arg === "--max-output-bytes") a.options.maxOutputBytes = byteCount(arg, next());
    else if (arg === "--inline-refs") a.options.inlineRefs = true;
    else if (arg.startsWith("--inline-refs="))
      a.options.inlineRefs = byteCount("--inline-refs", arg.slice("--inline-refs=".length));
    else if (arg === "--mcp-stdio") {
      const [command, ...rest] = next().split(/\s+/).filter(Boolean);
      if (!command) throw new UsageError("--mcp-stdio needs a command");
      a.specs.push({ mcp: { transport: "stdio", command, args: rest } });
    } else if (arg === "--mcp-http") a.specs.push({ mcp: { transport: "http", url: next() } });
    else if (arg.startsWith("-")) throw new UsageError(`unknown option ${arg}`);
    else a.specs.push(parseInputArg(arg));
  }
  if (a.specs.length === 0) throw new UsageError("compile needs at least one input");
  return a;
}

/** A file writer that waits for drain, or standard output through io. */
function openOutput(
  out: string | undefined,
  io: ToolsIo,
): { write: WriteChunk; close(): Promise<void> } {
  if (!out) {
    return {
      write: async (s) => {
        if (io.stdout(s) === false) await once(process.stdout, "drain");
      },
      close: async () => {},
    };
  }
  const stream: WriteStream = createWriteStream(out);
  return {
    write: async (s) => {
      if (!stream.write(s)) await once(stream, "drain");
    },
    close: () =>
      new Promise((resolve, reject) =>
        stream.end((err?: Error | null) => (err ? reject(err) : resolve())),
      ),
  };
}

/** "compiling 1,200/11,422 tools, 8 s left" on a terminal; nothing in a pipe. */
function progressLine(io: ToolsIo): CompileOptions["progress"] {
  if (!io.stderrIsTTY) return undefined;
  const started = Date.now();
  let shown = 0;
  return (done, total) => {
    const now = Date.now();
    if (done < total && now - shown < 250) return;
    shown = now;
    const left = done === 0 ? 0 : ((now - started) / done) * (total - done);
    io.stderr(
      `\rcompiling ${done.toLocaleString("en-US")}/${total.toLocaleString("en-US")} tools, ${Math.ceil(left / 1000)} s left \x1b[K`,
    );
    if (done === total) io.stderr("\r\x1b[K");
  };
}

async function emitDocument(a: CompileArgs, io: ToolsIo): Promise<number> {
  const { inputs, diagnostics } = await loadInputs(a.specs, a.overlays);
  const sink = new DiagnosticSink();
  sink.push(...diagnostics);
  const openapi = prepareInputs(inputs, sink).filter((i: CompileInput) => i.kind === "openapi");
  if (openapi.length !== 1) throw new UsageError("--emit-document takes exactly one OpenAPI input");
  const output = openOutput(a.out, io);
  await output.write(`${JSON.stringify(openapi[0]?.doc, null, 2)}\n`);
  await output.close();
  for (const d of sink.ordered()) io.stderr(formatDiagnostic(d));
  return sink.items.some((d) => d.severity === "error") ? 1 : 0;
}

async function compileCommand(args: string[], io: ToolsIo): Promise<number> {
  const a = parseCompileArgs(args);
  if (a.emitDocument) return emitDocument(a, io);
  const { inputs, diagnostics } = await loadInputs(a.specs, a.overlays);
  const sink = new DiagnosticSink();
  sink.push(...diagnostics);
  const progress = progressLine(io);
  const output = openOutput(a.out, io);
  const summary = await writeCompileOutput({
    tools: compileTools(inputs, sink, { ...a.options, ...(progress ? { progress } : {}) }),
    diagnostics: () => sink.ordered(),
    format: a.format,
    write: output.write,
  });
  await output.close();
  const all = sink.ordered();
  for (const d of all)
    if (d.severity !== "info" || a.out) {
      // Tens of thousands of lines: wait for the pipe rather than queue them all in memory.
      if (io.stderr(formatDiagnostic(d)) === false) await once(process.stderr, "drain");
    }
  const errors = all.filter((d) => d.severity === "error").length;
  const top = summary.largest[0];
  io.stderr(
    `${summary.tools} tools (${summary.toolBytes} bytes${top ? `, largest ${top.name} ${top.bytes} bytes` : ""}), ${errors} errors, ${all.length} diagnostics\n`,
  );
  return errors > 0 ? 1 : 0;
}

/** Reads a compile output (JSON or NDJSON) as a compileResult, or says why it is not one. */
async function readResult(file: string, io: ToolsIo): Promise<CompileResult | undefined> {
  const read = await readCompileOutput(file);
  if (!read.ok) {
    io.stderr(`${read.error}\n`);
    return undefined;
  }
  const problems = validateCompileResult(read.value);
  if (problems.length === 0) return read.value as CompileResult;
  io.stderr(`${file} is not a valid compileResult; run switchyard tools validate ${file}\n`);
  return undefined;
}

async function validateCommand(args: string[], io: ToolsIo): Promise<number> {
  const file = args[0];
  if (!file || args.length > 1) throw new UsageError("validate takes one file");
  const read = await readCompileOutput(file);
  if (!read.ok) {
    io.stderr(`${read.error}\n`);
    return 1;
  }
  const doc = read.value;
  let problems: Diagnostic[];
  let count = 0;
  if (typeof doc === "object" && doc !== null && !Array.isArray(doc) && "tools" in doc) {
    problems = validateCompileResult(doc).map((d) => ({ ...d, path: `${file}${d.path}` }));
    const tools = (doc as { tools: unknown }).tools;
    count = Array.isArray(tools) ? tools.length : 0;
  } else if (Array.isArray(doc)) {
    problems = doc.flatMap((t, i) =>
      validateToolDefinition(t).map((d) => ({ ...d, path: `${file}#/${i}${d.path.slice(1)}` })),
    );
    count = doc.length;
  } else {
    problems = validateToolDefinition(doc, file);
    count = 1;
  }
  for (const d of problems) io.stderr(formatDiagnostic(d));
  if (problems.length === 0) io.stdout(`${file}: ${count} tool definition(s) valid\n`);
  return problems.length === 0 ? 0 : 1;
}

async function statsCommand(args: string[], io: ToolsIo): Promise<number> {
  const file = args[0];
  if (!file || args.length > 1) throw new UsageError("stats takes one file");
  const result = await readResult(file, io);
  if (!result) return 1;
  io.stdout(`${JSON.stringify(toolSetStats(result.tools), null, 2)}\n`);
  return 0;
}

async function publishCommand(args: string[], io: ToolsIo): Promise<number> {
  const [name, file] = args;
  if (!name || !file || args.length > 2) throw new UsageError("publish takes <name> <file>");
  const read = await readCompileOutput(file);
  if (!read.ok) {
    io.stderr(`${read.error}\n`);
    return 1;
  }
  let nats: ReturnType<typeof commandNats>;
  try {
    // The same server and credential as every other command: NATS_URL, the `up` in this folder,
    // the config file.
    nats = commandNats(io.env);
  } catch (err) {
    io.stderr(`${(err as Error).message}\n`);
    return 1;
  }
  const nc = await connect({
    servers: nats.url.split(","),
    name: "switchyard-tools-publish",
    ...identityOptions(nats),
  });
  try {
    const store = await openToolSetStore(nc);
    const p = await store.publish(name, read.value);
    io.stdout(
      `published tool set ${name} version ${p.version}: ${p.tools} tools, ${p.bytes} bytes, ${p.digest}\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof ToolSetRejected) {
      io.stderr(`refused: ${err.message}\n`);
      for (const p of err.problems) io.stderr(`  ${p}\n`);
      return 1;
    }
    throw err;
  } finally {
    await nc.close();
  }
}

/**
 * `switchyard tools …`: compile, validate, stats and publish. Returns the exit code: 0 on
 * success, 1 when the result has errors (or validation/publishing fails), 2 on bad usage.
 */
export async function runToolsCommand(argv: string[], io: ToolsIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== undefined && (rest.includes("--help") || rest.includes("-h"))) {
    io.stdout(USAGE);
    return 0;
  }
  try {
    switch (sub) {
      case "compile":
        return await compileCommand(rest, io);
      case "validate":
        return await validateCommand(rest, io);
      case "stats":
        return await statsCommand(rest, io);
      case "publish":
        return await publishCommand(rest, io);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        io.stdout(USAGE);
        return sub === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown tools subcommand ${sub}`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`${err.message}\n${USAGE}`);
      return 2;
    }
    io.stderr(`switchyard tools ${sub}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

if (import.meta.main) {
  const code = await runToolsCommand(process.argv.slice(2), {
    stdout: (s) => process.stdout.write(s),
    stderr: (s) => process.stderr.write(s),
    env: process.env,
    stderrIsTTY: process.stderr.isTTY === true,
  });
  await exitWhenFlushed(code);
}
