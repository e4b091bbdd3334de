import { CompactSign, type CryptoKey, compactVerify, type KeyObject } from "jose";

/** What a checkpoint seals: a range of stream sequences and the chain over its job events. */
export interface CheckpointBody {
  /** First and last stream sequence covered (inclusive); audit messages inside are not counted. */
  readonly from_seq: number;
  readonly to_seq: number;
  /** Job events in the range. */
  readonly count: number;
  /** Chain value before the range (the previous checkpoint's hash, or the genesis hash). */
  readonly prev_hash: string;
  /** Chain value after the last event of the range. */
  readonly hash: string;
  /** Base64 of each event digest's first 8 bytes, in order: locates a changed event. */
  readonly digests: string;
  readonly created_at: string;
  readonly key_id: string;
}

/** The stored checkpoint message: the body plus a JWS (EdDSA) over exactly that body. */
export interface AuditCheckpoint {
  readonly type: "audit.checkpoint";
  readonly schema_version: 1;
  readonly data: CheckpointBody & { readonly jws: string };
}

type SigningKey = CryptoKey | KeyObject;

/** Signs a checkpoint body with Ed25519 (JWS compact, alg EdDSA). */
export async function signCheckpoint(
  body: CheckpointBody,
  key: SigningKey,
): Promise<AuditCheckpoint> {
  const jws = await new CompactSign(new TextEncoder().encode(JSON.stringify(body)))
    .setProtectedHeader({ alg: "EdDSA", kid: body.key_id, typ: "switchyard-checkpoint" })
    .sign(key);
  return { type: "audit.checkpoint", schema_version: 1, data: { ...body, jws } };
}

/**
 * Checks a checkpoint's signature and that the signed body is the one stored beside it.
 * Returns a problem text, or undefined when it holds.
 */
export async function verifyCheckpointSignature(
  checkpoint: AuditCheckpoint,
  key: SigningKey,
): Promise<string | undefined> {
  const { jws, ...body } = checkpoint.data;
  try {
    const { payload, protectedHeader } = await compactVerify(jws, key, { algorithms: ["EdDSA"] });
    if (protectedHeader.alg !== "EdDSA") return "checkpoint is not signed with EdDSA";
    const signed = JSON.parse(new TextDecoder().decode(payload)) as CheckpointBody;
    for (const field of Object.keys(body) as (keyof CheckpointBody)[]) {
      if (signed[field] !== body[field]) return `signed ${field} differs from the stored one`;
    }
    return undefined;
  } catch (err) {
    return `signature does not verify: ${(err as Error).message}`;
  }
}

/** True for a value shaped like a stored checkpoint. */
export function isCheckpoint(value: unknown): value is AuditCheckpoint {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as { type?: unknown }).type === "audit.checkpoint" &&
    typeof (value as { data?: { jws?: unknown } }).data?.jws === "string"
  );
}
