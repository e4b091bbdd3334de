import { randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { isJsError } from "./js-errors.ts";
import { retryWhileSettingUp } from "./streams.ts";
import { TOPOLOGY } from "./topology-names.ts";

export interface MetaSecretOptions {
  /** The key in `sy_meta`, e.g. `job_id_key`. */
  readonly key: string;
  /** Size of a newly created secret. */
  readonly bytes?: number;
  /** Pause between the reads after a lost creation race. */
  readonly retryDelayMs?: number;
}

const READ_ATTEMPTS = 20;

/**
 * A hub-wide secret kept in `sy_meta`: read it, or create it on the hub's first start. kv.create is
 * atomic, so replicas starting together agree on one value; the one that loses the race reads the
 * winner's. sy_meta is read from its stream leader (topology.ts), but a leader can change while a
 * cluster rolls, so a read that finds nothing after a lost race is tried again for a few seconds
 * before start-up gives up, naming the bucket and the key.
 */
export async function loadMetaSecret(meta: KV, options: MetaSecretOptions): Promise<Buffer> {
  const read = async () => {
    const entry = await meta.get(options.key);
    return entry?.operation === "PUT" ? Buffer.from(entry.string(), "base64") : undefined;
  };
  const existing = await read();
  if (existing) return existing;
  try {
    const secret = randomBytes(options.bytes ?? 32).toString("base64");
    await retryWhileSettingUp(() => meta.create(options.key, secret));
  } catch (err) {
    // Lost the creation race to another replica: its value is the one to use.
    if (!isJsError(err, "wrongLastSequence")) throw err;
  }
  for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
    const value = await read();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, options.retryDelayMs ?? 200));
  }
  throw new Error(
    `${options.key} could not be read or created in the meta bucket (${TOPOLOGY.metaBucket})`,
  );
}
