import { createHmac, randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";

/** Pattern of a job id: `job_` and 22 base64url characters (132 bits). */
export const JOB_ID_PATTERN = /^job_[A-Za-z0-9_-]{22}$/;

export type JobIdDeriver = (clientId: string, requestId: string) => string;

/**
 * Job ids are a keyed hash of (client, request_id): every ingress replica computes the same id for
 * the same request, which is what makes one JetStream publish enough for idempotency. The key is
 * secret, so ids cannot be guessed from request ids.
 */
export function createJobIdDeriver(key: Uint8Array): JobIdDeriver {
  if (key.length < 32) throw new Error("job id key must be at least 32 bytes");
  return (clientId, requestId) =>
    `job_${createHmac("sha256", key).update(clientId).update("\n").update(requestId).digest("base64url").slice(0, 22)}`;
}

export interface IdGenerator {
  /** A fresh random id with a prefix, e.g. evt_…; 128 bits. */
  next(prefix: string): string;
}

export const randomIds: IdGenerator = {
  next: (prefix) => `${prefix}_${randomBytes(16).toString("base64url")}`,
};

const JOB_ID_KEY = "job_id_key";

/**
 * Reads the hub's job-id key from the meta bucket, creating it on first start. kv.create is atomic,
 * so replicas starting together agree on one key.
 */
export async function loadJobIdKey(meta: KV, retryDelayMs = 200): Promise<Uint8Array> {
  const existing = await meta.get(JOB_ID_KEY);
  if (existing && existing.operation === "PUT") return Buffer.from(existing.string(), "base64");
  try {
    await meta.create(JOB_ID_KEY, randomBytes(32).toString("base64"));
  } catch {
    // Lost the creation race to another replica; its key is the one to use.
  }
  // On an R3 bucket a read may be answered by a replica that has not applied the key yet (seen on
  // 2.9.10 during a rolling restart under load: the key existed, two reads found nothing): read
  // again for a few seconds before giving up.
  for (let attempt = 0; attempt < 20; attempt++) {
    const entry = await meta.get(JOB_ID_KEY);
    if (entry && entry.operation === "PUT") return Buffer.from(entry.string(), "base64");
    await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
  }
  throw new Error("job id key could not be read or created in the meta bucket (sy_meta)");
}
