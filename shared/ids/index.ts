import { randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { loadMetaSecret } from "../bus/index.ts";

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
  // The key is imported once and the keyed state copied per id: 0.5 against 1.7 µs per id with
  // node:crypto's createHmac (a key import each), which every POST /run pays.
  const keyed = new Bun.CryptoHasher("sha256", key);
  return (clientId, requestId) =>
    `job_${keyed.copy().update(`${clientId}\n${requestId}`).digest("base64url").slice(0, 22)}`;
}

export interface IdGenerator {
  /** A fresh random id with a prefix, e.g. evt_…; 128 bits. */
  next(prefix: string): string;
}

/** Bytes drawn from the system's CSPRNG per refill of the id pool. */
const ID_POOL_BYTES = 4096;
let idPool = Buffer.alloc(0);
let idPoolAt = 0;

/**
 * Random bytes for ids (event ids, trace and span ids), handed out from a pool the system's
 * CSPRNG fills 4 KiB at a time: one call per 256 event ids instead of one each (a call per id
 * was 3% of the ingress's CPU, 2026-11-26 profile). The bytes are as random; the calls are fewer.
 * Keys and secrets do not come from here: they use randomBytes where they are made.
 */
export function idBytes(length: number): Buffer {
  // A view into the pool, encoded at once by every caller; copy it to keep it.
  if (idPoolAt + length > idPool.length) {
    idPool = randomBytes(Math.max(ID_POOL_BYTES, length));
    idPoolAt = 0;
  }
  const bytes = idPool.subarray(idPoolAt, idPoolAt + length);
  idPoolAt += length;
  return bytes;
}

export const randomIds: IdGenerator = {
  next: (prefix) => `${prefix}_${idBytes(16).toString("base64url")}`,
};

/** The hub's job-id key, created in `sy_meta` on the hub's first start (shared by every replica). */
export function loadJobIdKey(meta: KV, retryDelayMs?: number): Promise<Uint8Array> {
  return loadMetaSecret(meta, { key: "job_id_key", ...(retryDelayMs ? { retryDelayMs } : {}) });
}
