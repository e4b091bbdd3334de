import type { KV, Kvm, KvOptions } from "@nats-io/kv";
import { retryCreationRace } from "./streams.ts";

/** `kvm.create` (open the bucket, creating its stream when missing), safe when several processes start at once. */
export function createBucket(kvm: Kvm, name: string, options: Partial<KvOptions>): Promise<KV> {
  return retryCreationRace(() => kvm.create(name, options));
}
