import pino, { type Logger } from "pino";

export type { Logger } from "pino";

/**
 * Paths pino removes from every line. Tokens, secrets and task input must never reach a log; the
 * code does not log them, and this is the second line of defence.
 */
export const REDACT_PATHS = [
  "token",
  "authorization",
  "headers.authorization",
  "req.headers.authorization",
  "input",
  "*.input",
  "data.input",
  "secret",
  "secrets",
  "*.secret",
  "*.secrets",
  "callback_secrets",
  "*.callback_secrets",
  // NATS credentials, should nats.auth ever be logged (nothing does).
  "password",
  "*.password",
  "nkey_seed",
  "*.nkey_seed",
];

export interface LoggerOptions {
  readonly level: string;
  readonly service: string;
  /** Where lines go; defaults to stdout. Tests pass a stream to inspect output. */
  readonly destination?: pino.DestinationStream;
}

/** JSON logger with redaction; each line names the service. */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level,
      base: { service: options.service },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination,
  );
}

/**
 * A child logger made on first use. Most jobs log nothing on their way through, and pino's
 * `child` is not free: it serialises and redacts its bindings (7% of the executor's CPU when made
 * per job, 2026-11-26 profile). The bindings are read when the child is made.
 */
export function lazyChild(logger: Logger, bindings: () => pino.Bindings): Logger {
  let child: Logger | undefined;
  const made = () => {
    child ??= logger.child(bindings());
    return child;
  };
  return new Proxy(logger, {
    get(_target, property) {
      const target = made();
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
    set(_target, property, value) {
      return Reflect.set(made(), property, value);
    },
  });
}
