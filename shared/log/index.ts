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
