import { createHmac, randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { loadMetaSecret } from "../bus/meta-secret.ts";

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

/** The hub's job-id key, created in `sy_meta` on the hub's first start (shared by every replica). */
export function loadJobIdKey(meta: KV, retryDelayMs?: number): Promise<Uint8Array> {
  return loadMetaSecret(meta, { key: "job_id_key", ...(retryDelayMs ? { retryDelayMs } : {}) });
}
