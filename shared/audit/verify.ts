import type { CryptoKey, KeyObject } from "jose";
import { EVENT_SUBJECT_ROOT } from "../bus/index.ts";
import { ChainSegment, DIGEST_PREFIX_BYTES } from "./chain.ts";
import { type AuditCheckpoint, isCheckpoint, verifyCheckpointSignature } from "./checkpoint.ts";

/** One stored message as an auditor sees it: sequence, subject and the parsed JSON. */
export interface AuditRecord {
  readonly seq: number;
  readonly subject: string;
  readonly value: unknown;
}

export interface ChainProblem {
  readonly seq: number;
  readonly problem: string;
}

export interface ChainReport {
  readonly checkpoints: number;
  /** Job events covered by a verified checkpoint. */
  readonly sealed: number;
  /** Job events after the last checkpoint (not yet sealed). */
  readonly unsealed: number;
  readonly problems: readonly ChainProblem[];
}

const isJobEvent = (subject: string) => subject.startsWith(`${EVENT_SUBJECT_ROOT}.`);

/**
 * Recomputes the hash chain over the records (stream order) and checks every checkpoint: its range,
 * count, chain hash, per-event digests and (with a key) its Ed25519 signature. Problems name the
 * stream sequence where the record stream stops matching what was sealed: a reordered or dropped
 * record at its own sequence, a changed event at the sequence whose digest differs.
 */
export async function verifyChain(
  records: AsyncIterable<AuditRecord> | Iterable<AuditRecord>,
  publicKey?: CryptoKey | KeyObject,
): Promise<ChainReport> {
  const problems: ChainProblem[] = [];
  let pending: AuditRecord[] = [];
  let lastSeq: number | undefined;
  let previous: AuditCheckpoint | undefined;
  let checkpoints = 0;
  let sealed = 0;

  for await (const record of records) {
    if (lastSeq !== undefined && record.seq <= lastSeq) {
      problems.push({
        seq: record.seq,
        problem: `out of order: sequence ${record.seq} after ${lastSeq}`,
      });
      continue;
    }
    if (lastSeq !== undefined && record.seq > lastSeq + 1) {
      problems.push({
        seq: lastSeq + 1,
        problem: `missing: sequences ${lastSeq + 1}..${record.seq - 1} are absent`,
      });
    }
    lastSeq = record.seq;
    if (isJobEvent(record.subject)) {
      pending.push(record);
      continue;
    }
    if (!isCheckpoint(record.value)) continue;
    const checkpoint = record.value;
    const body = checkpoint.data;
    checkpoints++;
    if (previous && body.prev_hash !== previous.data.hash) {
      problems.push({
        seq: record.seq,
        problem: "checkpoint does not continue the previous checkpoint's chain",
      });
    }
    const before = pending.filter((r) => r.seq < body.from_seq);
    if (previous && before.length > 0) {
      problems.push({
        seq: (before[0] as AuditRecord).seq,
        problem: "event lies between two checkpoints' ranges and is sealed by neither",
      });
    }
    const covered = pending.filter((r) => r.seq >= body.from_seq && r.seq <= body.to_seq);
    pending = pending.filter((r) => r.seq > body.to_seq);
    const segment = new ChainSegment(body.prev_hash);
    for (const r of covered) segment.add(r.seq, r.subject, r.value);
    if (segment.hash !== body.hash || segment.count !== body.count) {
      const sealedDigests = Buffer.from(body.digests, "base64");
      const ours = Buffer.from(segment.digests(), "base64");
      let at = covered.length > 0 ? (covered[0] as AuditRecord).seq : body.from_seq;
      for (let i = 0; i < covered.length; i++) {
        const a = ours.subarray(i * DIGEST_PREFIX_BYTES, (i + 1) * DIGEST_PREFIX_BYTES);
        const b = sealedDigests.subarray(i * DIGEST_PREFIX_BYTES, (i + 1) * DIGEST_PREFIX_BYTES);
        if (!a.equals(b)) {
          at = (covered[i] as AuditRecord).seq;
          break;
        }
      }
      problems.push({
        seq: at,
        problem: `does not match checkpoint ${body.from_seq}..${body.to_seq} (sealed ${body.count} events, found ${segment.count})`,
      });
    } else {
      sealed += segment.count;
    }
    if (publicKey) {
      const signatureProblem = await verifyCheckpointSignature(checkpoint, publicKey);
      if (signatureProblem) problems.push({ seq: record.seq, problem: signatureProblem });
    }
    previous = checkpoint;
  }
  return { checkpoints, sealed, unsealed: pending.length, problems };
}
