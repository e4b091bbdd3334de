import { ConfigError } from "../../shared/config/index.ts";
import type { JsonShapeLimits } from "../../shared/json/index.ts";

/** The body limit when server.max_body_bytes is unset and NATS allows it. */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

/**
 * Bytes an event needs beyond the request body: the envelope (ids, type, client, time,
 * fingerprint: about 400 bytes), NATS headers (message id, expected sequence, event type,
 * traceparent: about 250), with room to spare.
 */
const ENVELOPE_BYTES = 4096;
/**
 * A number can come back longer than it was sent (1e20 is stored as 100000000000000000000):
 * at most 21 characters for a literal of 2 or more, so 24 bytes per metadata member covers it.
 */
const EXPANSION_PER_MEMBER = 24;

/** Bytes an event may add to its request body; the body limit plus this must fit max_payload. */
export function eventReserveBytes(metadata: JsonShapeLimits): number {
  return ENVELOPE_BYTES + metadata.maxMembers * EXPANSION_PER_MEMBER;
}

export interface BodyLimitInput {
  /** server.max_body_bytes when set. */
  readonly configured: number | undefined;
  /** The NATS server's max_payload (from its INFO). */
  readonly maxPayload: number;
  readonly natsUrl: string;
  readonly metadata: JsonShapeLimits;
}

/**
 * The body limit, derived so that every accepted body's event fits one NATS message: a configured
 * limit that cannot fit stops start-up with the key to change; an unset one is 1 MiB or as much as
 * max_payload leaves.
 */
export function deriveBodyLimit(input: BodyLimitInput): number {
  const ceiling = input.maxPayload - eventReserveBytes(input.metadata);
  if (input.configured === undefined) {
    if (ceiling < 1024) {
      throw new ConfigError("the configuration, checked against NATS", [
        {
          key: "server.metadata.max_members",
          message: `NATS max_payload at ${input.natsUrl} is ${input.maxPayload} bytes, too small for any request body with up to ${input.metadata.maxMembers} metadata members; lower it or raise max_payload in nats-server's configuration`,
        },
      ]);
    }
    return Math.min(DEFAULT_MAX_BODY_BYTES, ceiling);
  }
  if (input.configured > ceiling) {
    throw new ConfigError("the configuration, checked against NATS", [
      {
        key: "server.max_body_bytes",
        message: `is ${input.configured}, but a run's event (the body plus up to ${eventReserveBytes(input.metadata)} bytes of envelope) must fit the NATS max_payload of ${input.maxPayload} bytes at ${input.natsUrl}: set it to at most ${ceiling}, or raise max_payload in nats-server's configuration`,
      },
    ]);
  }
  return input.configured;
}
