import { parseArgs } from "node:util";
import type { JetStreamClient } from "@nats-io/jetstream";
import { readStream } from "../../shared/bus/index.ts";
import { type EventLayout, type PartitionRecord, readPartitions } from "../../shared/jobs/index.ts";
import { EVENTS_OPTIONS } from "./options.ts";

export interface CommandIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

const decoder = new TextDecoder();

interface EventFilter {
  readonly partition?: number;
  readonly job?: string;
  readonly client?: string;
  readonly type?: string;
  readonly since?: Date;
  readonly until?: Date;
}

/** The subject filter of one partition's stream for the flags given. */
function subjectFor(layout: EventLayout, p: number, filter: EventFilter): string | undefined {
  if (filter.client && filter.job)
    return layout.filters.job({ client_id: filter.client, job_id: filter.job });
  if (filter.job) return layout.filters.anyClientJob(filter.job);
  if (filter.client) return layout.filters.client(p, filter.client);
  return undefined;
}

/**
 * The records to print: with --job only the job's partition; otherwise every partition, merged by
 * receive time (to the head), or interleaved as they arrive (--follow).
 */
async function* recordsOf(
  js: JetStreamClient,
  layout: EventLayout,
  options: {
    filter: EventFilter;
    fromSeq?: number | undefined;
    since?: Date | undefined;
    follow: boolean;
    signal: AbortSignal;
  },
): AsyncGenerator<PartitionRecord> {
  const { filter } = options;
  const partitions =
    filter.partition !== undefined
      ? [filter.partition]
      : filter.job
        ? [layout.partitionOf({ job_id: filter.job })]
        : layout.streams().map((_, p) => p);
  const start = {
    ...(options.fromSeq !== undefined
      ? { fromSeq: options.fromSeq }
      : options.since
        ? { since: options.since }
        : {}),
    signal: options.signal,
  };
  if (!options.follow && layout.partitions > 1) {
    yield* readPartitions(js, layout, {
      ...start,
      partitions,
      filterOf: (p) => subjectFor(layout, p, filter),
    });
    return;
  }
  const streams = partitions.map((p) => {
    const filterSubject = subjectFor(layout, p, filter);
    return readStream(js, {
      stream: layout.stream(p),
      ...(filterSubject ? { filterSubject } : {}),
      ...start,
      follow: options.follow,
    });
  });
  yield* fanIn(streams, partitions);
}

/** Records of several streams as they arrive, each stream's order kept. */
async function* fanIn(
  streams: AsyncGenerator<Omit<PartitionRecord, "partition">>[],
  partitions: readonly number[],
): AsyncGenerator<PartitionRecord> {
  const pending = new Map<
    number,
    Promise<{ i: number; r: IteratorResult<Omit<PartitionRecord, "partition">> }>
  >();
  const pull = (i: number) => {
    const it = streams[i];
    if (it)
      pending.set(
        i,
        it.next().then((r) => ({ i, r })),
      );
  };
  for (let i = 0; i < streams.length; i++) pull(i);
  while (pending.size > 0) {
    const { i, r } = await Promise.race(pending.values());
    pending.delete(i);
    if (r.done) continue;
    yield { ...r.value, partition: partitions[i] ?? 0 };
    pull(i);
  }
}

function pretty(seq: number, time: string, value: Record<string, unknown>): string {
  const data = (value.data ?? {}) as Record<string, unknown>;
  const detail =
    value.type === "run.requested"
      ? `route=${String(data.route)} request_id=${String(data.request_id)}`
      : value.type === "audit.checkpoint"
        ? `seq ${String(data.from_seq)}..${String(data.to_seq)} count=${String(data.count)}`
        : JSON.stringify(data)
            .replace(/"input":"[^"]*"/, '"input":"…"')
            .slice(0, 80);
  return `${String(seq).padStart(8)}  ${time}  ${String(value.type ?? "?").padEnd(18)}  ${String(value.client_id ?? "-").padEnd(12)}  ${String(value.job_id ?? "-").padEnd(26)}  ${detail}\n`;
}

/** What is wrong with the values of the flags, before anything connects; undefined: nothing. */
export function eventsArgsProblem(values: Readonly<Record<string, unknown>>): string | undefined {
  for (const name of ["since", "until"] as const) {
    const given = values[name];
    if (typeof given === "string" && Number.isNaN(new Date(given).getTime())) {
      return `--${name} takes an RFC 3339 time, got '${given}'`;
    }
  }
  const partition = values.partition;
  if (typeof partition === "string" && !/^(0|[1-9][0-9]*)$/.test(partition)) {
    return `--partition takes a partition number from 0, got '${partition}'`;
  }
  for (const name of ["limit", "from-seq"] as const) {
    const given = values[name];
    if (typeof given === "string" && !/^[1-9][0-9]*$/.test(given)) {
      return `--${name} takes a whole number from 1, got '${given}'`;
    }
  }
  return undefined;
}

/**
 * `switchyard events`: the event stream as NDJSON ({seq, subject, time, event}) or a table, filtered
 * by job, client, type and time. `--from-seq` resumes an export (the last line's seq + 1). The
 * caller has refused what {@link eventsArgsProblem} finds, before connecting.
 */
export async function runEventsCommand(
  argv: string[],
  hub: { readonly js: JetStreamClient; readonly layout: EventLayout },
  io: CommandIo,
): Promise<number> {
  const { values } = parseArgs({ args: argv, options: EVENTS_OPTIONS, strict: true });
  const since = values.since ? new Date(values.since) : undefined;
  const until = values.until ? new Date(values.until) : undefined;
  const limit = values.limit ? Number(values.limit) : Number.POSITIVE_INFINITY;
  const fromSeq = values["from-seq"] ? Number(values["from-seq"]) : undefined;
  const partition = values.partition === undefined ? undefined : Number(values.partition);
  if (partition !== undefined && partition >= hub.layout.partitions) {
    io.stderr(`--partition takes a partition from 0 to ${hub.layout.partitions - 1}\n`);
    return 2;
  }
  const filter: EventFilter = {
    ...(partition === undefined ? {} : { partition }),
    ...(values.job ? { job: values.job } : {}),
    ...(values.client ? { client: values.client } : {}),
    ...(values.type ? { type: values.type } : {}),
  };
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once("SIGINT", onSignal);
  let printed = 0;
  try {
    const partitioned = hub.layout.partitions > 1;
    for await (const record of recordsOf(hub.js, hub.layout, {
      filter,
      fromSeq,
      since,
      follow: values.follow === true,
      signal: controller.signal,
    })) {
      const text = decoder.decode(record.data);
      const value = JSON.parse(text) as Record<string, unknown>;
      if (filter.type && value.type !== filter.type) continue;
      const occurred =
        typeof value.occurred_at === "string" ? new Date(value.occurred_at) : new Date(record.time);
      if (since && occurred < since) continue;
      if (until && occurred > until) {
        if (!values.follow) break;
        continue;
      }
      io.stdout(
        values.pretty
          ? pretty(record.seq, record.time, value)
          : `{${partitioned ? `"partition":${record.partition},` : ""}"seq":${record.seq},"subject":${JSON.stringify(record.subject)},"time":"${record.time}","event":${text}}\n`,
      );
      if (++printed >= limit) break;
    }
  } finally {
    process.off("SIGINT", onSignal);
  }
  return 0;
}
