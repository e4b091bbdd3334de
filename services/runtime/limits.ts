import { type Config, ConfigError } from "../../shared/config/index.ts";
import { redactUrl } from "../../shared/nats/index.ts";

/** Bytes a job.done event adds to its output: envelope, ids, NATS headers, with room to spare. */
const OUTPUT_ENVELOPE_BYTES = 4096;

/**
 * Every HTTP route's answer cap must leave its job.done event inside one NATS message: checked at
 * start against the server's max_payload, naming the key to change (an output that cannot be
 * stored would be retried forever).
 */
export function checkAnswerCaps(config: Config, maxPayload: number): void {
  const ceiling = maxPayload - OUTPUT_ENVELOPE_BYTES;
  const issues = config.routes.flatMap((route, i) =>
    route.executor.kind === "http" && route.executor.max_response_bytes > ceiling
      ? [
          {
            key: `routes[${i}].executor.max_response_bytes`,
            message: `is ${route.executor.max_response_bytes}, but the output is stored in one event that must fit the NATS max_payload of ${maxPayload} bytes at ${redactUrl(config.nats.url)}: set it to at most ${ceiling}, or raise max_payload`,
          },
        ]
      : [],
  );
  if (issues.length > 0) throw new ConfigError("the configuration, checked against NATS", issues);
}
