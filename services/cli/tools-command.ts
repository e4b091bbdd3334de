import { readFile, writeFile } from "node:fs/promises";
import { connect } from "@nats-io/transport-node";
import {
  type CompileResult,
  compileFromFiles,
  type Diagnostic,
  hasErrors,
  type InputSpec,
  openToolSetStore,
  parseDocumentText,
  parseInputArg,
  serializeResult,
  ToolSetRejected,
  toolSetStats,
  validateCompileResult,
  validateToolDefinition,
} from "../../shared/tools/index.ts";

export interface ToolsIo {
  stdout(s: string): void;
  stderr(s: string): void;
  env: Record<string, string | undefined>;
}

const USAGE = `usage:
  switchyard tools compile <inputs…> [--overlay file…] [--mcp-stdio "cmd args"] [--mcp-http url] [-o out.json]
  switchyard tools validate <file>        (a compileResult, one tool definition, or an array of them)
  switchyard tools stats <file>           (tool count, risk mix, estimated tokens)
  switchyard tools publish <name> <compileResult.json>   (stores the set in NATS KV sy_toolsets; uses NATS_URL)
inputs: OpenAPI 3.0/3.1, Swagger 2.0, Overlay 1.0/1.1, MCP tools/list, manual tools (JSON/YAML), SDK modules (.ts/.js);
prefix openapi:, overlay:, mcp:, manual: or sdk: to force the kind.
`;

function formatDiagnostic(d: Diagnostic): string {
  return `${d.severity}: ${d.code} at ${d.path}: ${d.message}${d.suggestion ? ` (${d.suggestion})` : ""}\n`;
}

async function readJsonOrYaml(file: string, io: ToolsIo): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    io.stderr(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}\n`);
    return undefined;
  }
  const parsed = parseDocumentText(text);
  if (!parsed.ok) {
    io.stderr(`${file} is not valid JSON or YAML: ${parsed.error}\n`);
    return undefined;
  }
  return parsed.doc;
}

async function compileCommand(args: string[], io: ToolsIo): Promise<number> {
  const specs: InputSpec[] = [];
  const overlays: string[] = [];
  let out: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const next = () => {
      const v = args[++i];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      return v;
    };
    if (a === "--overlay") overlays.push(next());
    else if (a === "-o" || a === "--out") out = next();
    else if (a === "--mcp-stdio") {
      const [command, ...rest] = next().split(/\s+/).filter(Boolean);
      if (!command) throw new UsageError("--mcp-stdio needs a command");
      specs.push({ mcp: { transport: "stdio", command, args: rest } });
    } else if (a === "--mcp-http") specs.push({ mcp: { transport: "http", url: next() } });
    else if (a.startsWith("-")) throw new UsageError(`unknown option ${a}`);
    else specs.push(parseInputArg(a));
  }
  if (specs.length === 0) throw new UsageError("compile needs at least one input");
  const result = await compileFromFiles(specs, overlays);
  const text = serializeResult(result);
  if (out) await writeFile(out, text);
  else io.stdout(text);
  for (const d of result.diagnostics)
    if (d.severity !== "info" || out) io.stderr(formatDiagnostic(d));
  const errors = result.diagnostics.filter((d) => d.severity === "error").length;
  io.stderr(
    `${result.tools.length} tools, ${errors} errors, ${result.diagnostics.length} diagnostics\n`,
  );
  return hasErrors(result) ? 1 : 0;
}

function asCompileResult(doc: unknown): CompileResult | undefined {
  return validateCompileResult(doc).length === 0 ? (doc as CompileResult) : undefined;
}

async function validateCommand(args: string[], io: ToolsIo): Promise<number> {
  const file = args[0];
  if (!file || args.length > 1) throw new UsageError("validate takes one file");
  const doc = await readJsonOrYaml(file, io);
  if (doc === undefined) return 1;
  let problems: Diagnostic[];
  let count = 0;
  if (typeof doc === "object" && doc !== null && !Array.isArray(doc) && "tools" in doc) {
    problems = validateCompileResult(doc).map((d) => ({ ...d, path: `${file}${d.path}` }));
    count = Array.isArray((doc as { tools: unknown }).tools)
      ? (doc as { tools: unknown[] }).tools.length
      : 0;
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
  const doc = await readJsonOrYaml(file, io);
  const result = asCompileResult(doc);
  if (!result) {
    io.stderr(`${file} is not a valid compileResult; run switchyard tools validate ${file}\n`);
    return 1;
  }
  io.stdout(`${JSON.stringify(toolSetStats(result.tools), null, 2)}\n`);
  return 0;
}

async function publishCommand(args: string[], io: ToolsIo): Promise<number> {
  const [name, file] = args;
  if (!name || !file || args.length > 2)
    throw new UsageError("publish takes <name> <compileResult.json>");
  const doc = await readJsonOrYaml(file, io);
  if (doc === undefined) return 1;
  const url = io.env.NATS_URL;
  if (!url) {
    io.stderr("NATS_URL is not set\n");
    return 1;
  }
  const nc = await connect({ servers: url, name: "switchyard-tools-publish" });
  try {
    const store = await openToolSetStore(nc);
    const revision = await store.publish(name, doc);
    io.stdout(`published tool set ${name} (revision ${revision})\n`);
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

class UsageError extends Error {}

/**
 * `switchyard tools …`: compile, validate, stats and publish. Returns the exit code: 0 on
 * success, 1 when the result has errors (or validation/publishing fails), 2 on bad usage.
 */
export async function runToolsCommand(argv: string[], io: ToolsIo): Promise<number> {
  const [sub, ...rest] = argv;
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
  });
  process.exit(code);
}
