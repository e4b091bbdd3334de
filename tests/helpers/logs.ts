import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../shared/log/index.ts";

/** A real pino logger whose lines are kept in memory, so tests can read what was logged. */
export function captureLogger(level = "info"): { logger: Logger; logs(): string } {
  let captured = "";
  const destination = new Writable({
    write(chunk, _enc, done) {
      captured += chunk.toString();
      done();
    },
  });
  return { logger: createLogger({ level, service: "test", destination }), logs: () => captured };
}
