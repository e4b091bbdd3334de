import type { KV, Kvm, KvOptions } from "@nats-io/kv";
import { isJsError } from "./js-errors.ts";

const ATTEMPTS = 4;
const RETRY_MS = 100;

/**
 * Runs a create of a stream or bucket that several processes may make at once. nats-server 2.9
 * can refuse the second of two concurrent creates of the same stream with "subjects overlap with
 * an existing stream" (10065) or "stream name already in use" (10058) while the first is still
 * being set up; a later attempt (100, 200, 300 ms on) finds the stream. A real conflict (another
 * stream holds the subjects) fails every attempt and is thrown.
 */
export async function retryCreationRace<T>(create: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await create();
    } catch (err) {
      const raced = isJsError(err, "streamSubjectOverlap", "streamNameInUse");
      if (!raced || attempt >= ATTEMPTS) throw err;
      await Bun.sleep(RETRY_MS * attempt);
    }
  }
}

/** `kvm.create` (open the bucket, creating its stream when missing), safe when several processes start at once. */
export function createBucket(kvm: Kvm, name: string, options: Partial<KvOptions>): Promise<KV> {
  return retryCreationRace(() => kvm.create(name, options));
}
