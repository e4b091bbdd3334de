import type { JetStreamClient } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { CryptoKey, KeyObject } from "jose";
import {
  type AuditRecord,
  type ChainReport,
  compareViews,
  type ExpectedSpan,
  Replayer,
  type ViewDivergence,
  verifyChain,
} from "../../shared/audit/index.ts";
import { checkEvent, EVENT_SUBJECT_ROOT, readStream } from "../../shared/bus/index.ts";
import type { JobView } from "../../shared/domain/index.ts";
import { jobRefOfEventSubject, jobViewKey } from "../../shared/jobs/index.ts";

const decoder = new TextDecoder();

export interface AuditReport {
  readonly events: number;
  readonly jobs: number;
  readonly divergences: readonly ViewDivergence[];
  /** Rows of the search index that differ from the replay (when an index was given). */
  readonly indexDivergences: readonly ViewDivergence[];
  readonly chain: ChainReport;
}

/** Every stored message of the stream, parsed, in order. */
export async function* streamRecords(
  js: JetStreamClient,
  stream?: string,
): AsyncGenerator<AuditRecord> {
  for await (const record of readStream(js, stream === undefined ? {} : { stream })) {
    yield {
      seq: record.seq,
      subject: record.subject,
      value: JSON.parse(decoder.decode(record.data)),
    };
  }
}

/** Records from an NDJSON export written by `switchyard events` (lines {seq, subject, event}). */
export function* fileRecords(text: string): Generator<AuditRecord> {
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const parsed = JSON.parse(line) as { seq: number; subject: string; event: unknown };
    yield { seq: parsed.seq, subject: parsed.subject, value: parsed.event };
  }
}

/**
 * Replays records through the projector's `transition` and recomputes the checkpoint chain in one
 * pass. With `views`, compares every job view with its replayed state.
 */
export async function auditRecords(
  records: AsyncIterable<AuditRecord> | Iterable<AuditRecord>,
  options: {
    views?: ReadonlyMap<string, unknown>;
    /** The search index's rows (issue 16): compared like the views. */
    index?: AsyncIterable<JobView>;
    publicKey?: CryptoKey | KeyObject;
    /** The sequences the records should span (the live stream's), so missing ends are found. */
    expected?: ExpectedSpan;
  },
): Promise<AuditReport> {
  const replayer = new Replayer();
  let events = 0;
  async function* tap(): AsyncGenerator<AuditRecord> {
    for await (const record of records) {
      if (record.subject.startsWith(`${EVENT_SUBJECT_ROOT}.`)) {
        events++;
        const ref = jobRefOfEventSubject(record.subject);
        try {
          if (ref) replayer.apply(jobViewKey(ref), record.seq, checkEvent(record.value));
        } catch {
          // An undecodable event is reported by the chain check if it was altered; the
          // projector terminates such messages too, so it is not part of any view.
        }
      }
      yield record;
    }
  }
  const chain = await verifyChain(tap(), options.publicKey, options.expected);
  const divergences = options.views ? compareViews(replayer.states, options.views) : [];
  const indexDivergences = options.index
    ? compareViews(replayer.states, await indexRows(options.index, replayer))
    : [];
  return { events, jobs: replayer.states.size, divergences, indexDivergences, chain };
}

/**
 * The index's rows by `<client>.<job>`. A row the replay lacks is kept (a divergence) unless it
 * is older than every replayed job: its events have aged out of the stream (retention), and the
 * indexer prunes it within the hour.
 */
async function indexRows(
  rows: AsyncIterable<JobView>,
  replayer: Replayer,
): Promise<Map<string, unknown>> {
  let oldest = "";
  for (const state of replayer.states.values()) {
    if (state && (oldest === "" || state.created_at < oldest)) oldest = state.created_at;
  }
  const out = new Map<string, unknown>();
  for await (const row of rows) {
    const key = jobViewKey(row);
    if (replayer.states.has(key) || row.created_at >= oldest) out.set(key, row);
  }
  return out;
}

/** Reads every job view from the KV bucket. */
export async function readViews(kv: KV): Promise<Map<string, unknown>> {
  const views = new Map<string, unknown>();
  const keys: string[] = [];
  for await (const key of await kv.keys()) keys.push(key);
  for (const key of keys) {
    const entry = await kv.get(key);
    if (entry && entry.operation === "PUT" && entry.length > 0) views.set(key, entry.json());
  }
  return views;
}
