import { createHash } from "node:crypto";
import { canonicalJson } from "../domain/index.ts";

/** Bytes of each event's digest kept in a checkpoint, enough to point at the one that changed. */
export const DIGEST_PREFIX_BYTES = 8;
/** The chain's value before the first event. */
export const GENESIS_HASH = "0".repeat(64);

/**
 * Digest of one stored event: its stream sequence, subject and canonical JSON. Canonical JSON makes
 * the digest independent of formatting, so an NDJSON export can be verified; any change of a value
 * changes it.
 */
export function eventDigest(seq: number, subject: string, event: unknown): Buffer {
  return createHash("sha256")
    .update(`${seq}\n${subject}\n${canonicalJson(event)}`)
    .digest();
}

/** The running chain: hash(previous hash ‖ event digest), hex. */
export function chainStep(previousHex: string, digest: Buffer): string {
  return createHash("sha256").update(Buffer.from(previousHex, "hex")).update(digest).digest("hex");
}

/** Accumulates events into a chain segment, for a checkpoint or for verifying one. */
export class ChainSegment {
  private hashHex: string;
  private readonly prefixes: Buffer[] = [];
  readonly seqs: number[] = [];

  constructor(readonly previousHex: string) {
    this.hashHex = previousHex;
  }

  add(seq: number, subject: string, event: unknown): void {
    const digest = eventDigest(seq, subject, event);
    this.hashHex = chainStep(this.hashHex, digest);
    this.prefixes.push(digest.subarray(0, DIGEST_PREFIX_BYTES));
    this.seqs.push(seq);
  }

  get hash(): string {
    return this.hashHex;
  }

  get count(): number {
    return this.seqs.length;
  }

  /** The digest prefixes, base64, in order. */
  digests(): string {
    return Buffer.concat(this.prefixes).toString("base64");
  }
}
