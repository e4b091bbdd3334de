import type { JobView } from "../domain/index.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The stored job view: the JSON of a JobView, as the projector writes it to KV `sy_jobs` (bytes)
 * and the indexer to the search index (text). Every reader of a stored view decodes it here. The
 * views' one writer folds them through the domain's evolve, so a read does not check them against
 * a schema again (that would cost every GET /jobs a validation).
 */
export const jobViewCodec = {
  encode: (view: JobView): Uint8Array => encoder.encode(JSON.stringify(view)),
  decode: (bytes: Uint8Array): JobView => JSON.parse(decoder.decode(bytes)) as JobView,
  toText: (view: JobView): string => JSON.stringify(view),
  fromText: (text: string): JobView => JSON.parse(text) as JobView,
} as const;
