import type { CryptoKey, KeyObject } from "jose";
import { EVENT_SUBJECT_ROOT } from "../bus/index.ts";
import { ChainSegment, DIGEST_PREFIX_BYTES } from "./chain.ts";
import {
  type AuditCheckpoint,
  type CheckpointBody,
  isCheckpoint,
  verifyCheckpointSignature,
} from "./checkpoint.ts";

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
  /** In sequence order: the first problem is the first place the records stop matching. */
  readonly problems: readonly ChainProblem[];
}

/**
 * The sequences the records should span, where the reader knows them (the live stream's first
 * and last sequence when the verification started). An export file carries no such bounds.
 */
export interface ExpectedSpan {
  readonly firstSeq: number;
  readonly lastSeq: number;
}

const isJobEvent = (subject: string) => subject.startsWith(`${EVENT_SUBJECT_ROOT}.`);

/** Sequences absent from the records, as inclusive ranges. */
interface Gap {
  readonly from: number;
  readonly to: number;
}

const missing = (gap: Gap): ChainProblem => ({
  seq: gap.from,
  problem:
    gap.from === gap.to
      ? `missing: sequence ${gap.from} is absent`
      : `missing: sequences ${gap.from}..${gap.to} are absent`,
});

/** Where a checkpoint's recomputed segment first differs from what it sealed. */
function firstDifference(body: CheckpointBody, covered: readonly AuditRecord[]): number {
  const sealedDigests = Buffer.from(body.digests, "base64");
  const segment = new ChainSegment(body.prev_hash);
  for (const r of covered) segment.add(r.seq, r.subject, r.value);
  const ours = Buffer.from(segment.digests(), "base64");
  for (let i = 0; i < covered.length; i++) {
    const a = ours.subarray(i * DIGEST_PREFIX_BYTES, (i + 1) * DIGEST_PREFIX_BYTES);
    const b = sealedDigests.subarray(i * DIGEST_PREFIX_BYTES, (i + 1) * DIGEST_PREFIX_BYTES);
    if (!a.equals(b)) return (covered[i] as AuditRecord).seq;
  }
  return covered.length > 0 ? (covered[0] as AuditRecord).seq : body.from_seq;
}

/** The state of one pass over the records. */
class ChainCheck {
  readonly problems: ChainProblem[] = [];
  readonly gaps: Gap[] = [];
  pending: AuditRecord[] = [];
  firstSeq: number | undefined;
  lastSeq: number | undefined;
  previous: { readonly seq: number; readonly checkpoint: AuditCheckpoint } | undefined;
  checkpoints = 0;
  sealed = 0;

  addGap(gap: Gap): void {
    this.gaps.push(gap);
    this.problems.push(missing(gap));
  }

  hasGap(from: number, to: number): boolean {
    return this.gaps.some((g) => g.to >= from && g.from <= to);
  }

  /** False when the record is out of order (reported, and left out of the chain). */
  take(record: AuditRecord): boolean {
    const last = this.lastSeq;
    if (last !== undefined && record.seq <= last) {
      this.problems.push({
        seq: record.seq,
        problem: `out of order: sequence ${record.seq} after ${last}`,
      });
      return false;
    }
    if (last !== undefined && record.seq > last + 1) {
      this.addGap({ from: last + 1, to: record.seq - 1 });
    }
    this.firstSeq ??= record.seq;
    this.lastSeq = record.seq;
    return true;
  }

  /**
   * A checkpoint whose range starts before the first record: the sequences in between are
   * missing from the start of the records (a gap between two records is found as they come).
   */
  checkStart(body: CheckpointBody): void {
    const first = this.firstSeq as number;
    if (body.from_seq < first && !this.hasGap(body.from_seq, first - 1)) {
      this.addGap({ from: body.from_seq, to: first - 1 });
    }
  }

  async checkpoint(record: AuditRecord, publicKey?: CryptoKey | KeyObject): Promise<void> {
    const checkpoint = record.value as AuditCheckpoint;
    const body = checkpoint.data;
    this.checkpoints++;
    this.checkStart(body);
    const previous = this.previous;
    // A missing record explains what follows from it: it is reported once, as missing.
    const sinceLastCheckpoint = this.hasGap(previous ? previous.seq : 1, record.seq);
    if (previous && body.prev_hash !== previous.checkpoint.data.hash && !sinceLastCheckpoint) {
      this.problems.push({
        seq: record.seq,
        problem: "checkpoint does not continue the previous checkpoint's chain",
      });
    }
    const before = this.pending.filter((r) => r.seq < body.from_seq);
    if (previous && before.length > 0 && !sinceLastCheckpoint) {
      this.problems.push({
        seq: (before[0] as AuditRecord).seq,
        problem: "event lies between two checkpoints' ranges and is sealed by neither",
      });
    }
    const covered = this.pending.filter((r) => r.seq >= body.from_seq && r.seq <= body.to_seq);
    this.pending = this.pending.filter((r) => r.seq > body.to_seq);
    const segment = new ChainSegment(body.prev_hash);
    for (const r of covered) segment.add(r.seq, r.subject, r.value);
    if (segment.hash === body.hash && segment.count === body.count) {
      this.sealed += segment.count;
    } else if (!this.hasGap(body.from_seq, body.to_seq)) {
      this.problems.push({
        seq: firstDifference(body, covered),
        problem: `does not match checkpoint ${body.from_seq}..${body.to_seq} (sealed ${body.count} events, found ${segment.count})`,
      });
    }
    if (publicKey) {
      const signatureProblem = await verifyCheckpointSignature(checkpoint, publicKey);
      if (signatureProblem) this.problems.push({ seq: record.seq, problem: signatureProblem });
    }
    this.previous = { seq: record.seq, checkpoint };
  }

  /** The records ended: what the expected span says is missing at either end. */
  finish(expected?: ExpectedSpan): void {
    if (!expected) return;
    const first = this.firstSeq;
    const last = this.lastSeq;
    if (first === undefined || last === undefined) {
      // An empty stream reports 0..0 (never written) or last + 1..last (purged).
      const from = Math.max(1, expected.firstSeq);
      if (expected.lastSeq >= from) this.addGap({ from, to: expected.lastSeq });
      return;
    }
    if (first > expected.firstSeq && !this.hasGap(expected.firstSeq, first - 1)) {
      this.addGap({ from: expected.firstSeq, to: first - 1 });
    }
    if (last < expected.lastSeq) this.addGap({ from: last + 1, to: expected.lastSeq });
  }
}

/**
 * Recomputes the hash chain over the records (stream order) and checks every checkpoint: its range,
 * count, chain hash, per-event digests and (with a key) its Ed25519 signature. Problems name the
 * stream sequence where the record stream stops matching what was sealed: a missing record at its
 * own sequence, wherever it is (between two records, before the first one a checkpoint covers,
 * or, with `expected`, at either end), a reordered record at its sequence, a changed event at the
 * sequence whose digest differs. What a missing record breaks further on (the checkpoint over
 * it, the next checkpoint's link) is not reported again. Records missing after the last one of an
 * export file cannot be told from an export that ended there: verify the live stream for those.
 */
export async function verifyChain(
  records: AsyncIterable<AuditRecord> | Iterable<AuditRecord>,
  publicKey?: CryptoKey | KeyObject,
  expected?: ExpectedSpan,
): Promise<ChainReport> {
  const check = new ChainCheck();
  for await (const record of records) {
    if (!check.take(record)) continue;
    if (isJobEvent(record.subject)) check.pending.push(record);
    else if (isCheckpoint(record.value)) await check.checkpoint(record, publicKey);
  }
  check.finish(expected);
  return {
    checkpoints: check.checkpoints,
    sealed: check.sealed,
    unsealed: check.pending.length,
    problems: [...check.problems].sort((a, b) => a.seq - b.seq),
  };
}
