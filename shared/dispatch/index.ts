import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { createBucket } from "../bus/index.ts";

/** KV bucket: job_id → where the job is and how its HTTP dispatch stands. */
export const DISPATCH_BUCKET = "sy_dispatch";

/**
 * Where an HTTP attempt stands: `sending` (written before the POST, so a crash mid-POST is
 * visible), `accepted` (the executor answered 202 and will report), `retrying` (the attempt
 * failed; the task waits for its backoff).
 */
export type DispatchPhase = "sending" | "accepted" | "retrying";

/** One job's dispatch record. */
export interface DispatchRecord {
  readonly client_id: string;
  readonly route: string;
  readonly attempt: number;
  readonly phase: DispatchPhase;
}

/**
 * The job_id index the executor report endpoint needs: executors know only the job id, the
 * events live under the client's subject. The executor writes the record before it sends a task,
 * so every job an executor can report on has one.
 */
export interface DispatchIndex {
  get(jobId: string): Promise<DispatchRecord | undefined>;
  put(jobId: string, record: DispatchRecord): Promise<void>;
}

function isRecord(value: unknown): value is DispatchRecord {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    typeof r.client_id === "string" &&
    typeof r.route === "string" &&
    typeof r.attempt === "number" &&
    (r.phase === "sending" || r.phase === "accepted" || r.phase === "retrying")
  );
}

/** An index over an open KV bucket. Job ids are KV-key-safe (`job_` + base64url). */
export function createDispatchIndex(kv: KV): DispatchIndex {
  return {
    async get(jobId) {
      const entry = await kv.get(jobId);
      if (entry?.operation !== "PUT" || entry.length === 0) return undefined;
      const value: unknown = entry.json();
      return isRecord(value) ? value : undefined;
    },
    async put(jobId, record) {
      await kv.put(jobId, JSON.stringify(record));
    },
  };
}

/** Opens (creating when missing) the bucket; records live as long as the job's events. */
export async function openDispatchIndex(
  nc: NatsConnection,
  options: { readonly replicas: number; readonly ttlMs: number },
): Promise<DispatchIndex> {
  const kv = await createBucket(new Kvm(nc), DISPATCH_BUCKET, {
    history: 1,
    replicas: options.replicas,
    ttl: options.ttlMs,
    storage: "file",
  });
  return createDispatchIndex(kv);
}
