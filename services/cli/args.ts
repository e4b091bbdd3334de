import { type ParseArgsConfig, parseArgs } from "node:util";

/** Bad usage: printed with the command's usage, exit 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
    this.name = "UsageError";
  }
}

type Options = NonNullable<ParseArgsConfig["options"]>;

/** What a command accepts, and the help it prints for --help / -h. */
export interface CommandSpec<O extends Options = Options> {
  readonly usage: string;
  readonly options?: O;
  /** Positional arguments: at least `min`, at most `max` (default 0 and 0). */
  readonly positionals?: { readonly min: number; readonly max: number };
}

export type Parsed<O extends Options> =
  | { readonly help: true }
  | {
      readonly help: false;
      readonly values: ReturnType<
        typeof parseArgs<{ options: O; strict: true; allowPositionals: true }>
      >["values"];
      readonly positionals: string[];
    };

/**
 * Parses a command's arguments strictly: unknown flags and missing values are usage errors, and
 * --help / -h anywhere asks for the command's help (never a stack trace, never a side effect such
 * as a client named "--help").
 */
export function parseCommand<O extends Options>(
  spec: CommandSpec<O>,
  argv: readonly string[],
): Parsed<O> {
  if (argv.includes("--help") || argv.includes("-h")) return { help: true };
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...(spec.options ?? {}) },
      strict: true,
      allowPositionals: true,
    });
  } catch (err) {
    // node:util's message goes on about '--' after its first sentence.
    const first = (err as Error).message.split(/\.\s/)[0] ?? "bad arguments";
    throw new UsageError(first, spec.usage);
  }
  const { min, max } = spec.positionals ?? { min: 0, max: 0 };
  const count = parsed.positionals.length;
  if (count < min) throw new UsageError("missing argument", spec.usage);
  if (count > max) {
    throw new UsageError(`unexpected argument '${parsed.positionals[max]}'`, spec.usage);
  }
  return { help: false, values: parsed.values as never, positionals: parsed.positionals };
}
