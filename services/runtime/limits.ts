import { type Config, ConfigError } from "../../shared/config/index.ts";
import { answerCapOf } from "../../shared/executor-kinds/index.ts";
import { redactUrl } from "../../shared/nats/index.ts";

/** Bytes a job.done event adds to its output: envelope, ids, NATS headers, with room to spare. */
const OUTPUT_ENVELOPE_BYTES = 4096;

/**
 * Every route's answer cap (a kind's, e.g. HTTP's max_response_bytes) must leave its job.done
 * event inside one NATS message: checked at start against the server's max_payload, naming the key
 * to change (an output that cannot be stored would be retried forever).
 */
export function checkAnswerCaps(config: Config, maxPayload: number): void {
  const ceiling = maxPayload - OUTPUT_ENVELOPE_BYTES;
  const issues = config.routes.flatMap((route, i) => {
    const cap = answerCapOf(route.executor);
    return cap && cap.bytes > ceiling
      ? [
          {
            key: `routes[${i}].executor.${cap.field}`,
            message: `is ${cap.bytes}, but the output is stored in one event that must fit the NATS max_payload of ${maxPayload} bytes at ${redactUrl(config.nats.url)}: set it to at most ${ceiling}, or raise max_payload`,
          },
        ]
      : [];
  });
  if (issues.length > 0) throw new ConfigError("the configuration, checked against NATS", issues);
}
