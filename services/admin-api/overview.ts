import { classifyNatsError, TOPOLOGY } from "../../shared/bus/index.ts";
import { CLIENT_ID_PATTERN } from "../../shared/config/index.ts";
import type { CountRow } from "../../shared/search/index.ts";
import { parseTime, queryValues, refuseUnknown } from "../../shared/search/index.ts";
import { type AdminContext, callerOf, json, requireStore } from "./context.ts";
import { invalid, noQuery } from "./search.ts";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** The longest counts window: 31 days of per-minute counts. */
const MAX_WINDOW = 31 * DAY;
const CLIENT = new RegExp(CLIENT_ID_PATTERN);

function sumBy(rows: readonly CountRow[], key: "route" | "status"): Record<string, number> {
  const out: Record<string, number> = {};
  for (const row of rows) out[row[key]] = (out[row[key]] ?? 0) + row.count;
  return out;
}

/**
 * GET /admin/v1/counts?created_after=&created_before=&client=: jobs created in the window by
 * status and route (now, not at creation), from the index's per-minute counts. The window is
 * widened to whole minutes; default the last 24 hours, at most 31 days.
 */
export async function counts(ctx: AdminContext, request: Request): Promise<Response> {
  await callerOf(ctx, request);
  const store = requireStore(ctx);
  const url = new URL(request.url);
  refuseUnknown(url, new Set(["created_after", "created_before", "client"]), invalid);
  const now = ctx.clock.now().getTime();
  const to = parseTime(url, "created_before", invalid) ?? now + MINUTE;
  const from = parseTime(url, "created_after", invalid) ?? to - DAY;
  if (from >= to) throw invalid("created_after", "must be before created_before");
  if (to - from > MAX_WINDOW) throw invalid("created_after", "the window may be at most 31 days");
  const clients = queryValues(url, "client", 20, invalid);
  for (const c of clients) if (!CLIENT.test(c)) throw invalid("client", "is not a client id");
  const fromMinute = Math.floor(from / MINUTE);
  const toMinute = Math.ceil(to / MINUTE);
  const rows = await store.counts({ kind: "created", fromMinute, toMinute, clientIds: clients });
  return json({
    window: {
      from: new Date(fromMinute * MINUTE).toISOString(),
      to: new Date(toMinute * MINUTE).toISOString(),
    },
    total: rows.reduce((n, r) => n + r.count, 0),
    by_status: sumBy(rows, "status"),
    by_route: sumBy(rows, "route"),
    rows,
  });
}

/** Jobs per minute of one count kind over the last `minutes`, oldest first. */
async function perMinute(ctx: AdminContext, kind: "created" | "completed", minutes: number) {
  const nowMinute = Math.floor(ctx.clock.now().getTime() / MINUTE);
  const fromMinute = nowMinute - minutes + 1;
  const found = await requireStore(ctx).perMinute({ kind, fromMinute, toMinute: nowMinute + 1 });
  return Array.from({ length: minutes }, (_, i) => found.get(fromMinute + i) ?? 0);
}

/**
 * GET /admin/v1/overview: what the console's first page shows, in one cheap call (it is polled):
 * jobs accepted and completed per minute over the last hour, jobs of the last 24 hours by status,
 * consumer backlogs, projector and index lag, and the callback success rate.
 */
export async function overview(ctx: AdminContext, request: Request): Promise<Response> {
  await callerOf(ctx, request);
  noQuery(request);
  const store = requireStore(ctx);
  const now = ctx.clock.now().getTime();
  const nowMinute = Math.floor(now / MINUTE);
  const day = { fromMinute: nowMinute - 24 * 60 + 1, toMinute: nowMinute + 1 };
  const [accepted, completed, byStatus, callbacks, position, consumers] = await Promise.all([
    perMinute(ctx, "created", 60),
    perMinute(ctx, "completed", 60),
    store.counts({ kind: "created", ...day }),
    store.counts({ kind: "callback", ...day }),
    store.position(),
    consumerBacklogs(ctx),
  ]);
  const eventStore = consumers === null ? "unreachable" : "reachable";
  const delivered = sumBy(callbacks, "status").delivered ?? 0;
  const failed = sumBy(callbacks, "status").failed ?? 0;
  // Summed over the partitions' projector durables (one per partition stream).
  const eventStreams = new Set(ctx.layout.streams());
  const projectors = consumers?.filter(
    (c) => eventStreams.has(c.stream) && c.name === TOPOLOGY.consumers.projector,
  );
  const projector =
    projectors === undefined || projectors.length === 0
      ? undefined
      : projectors.reduce(
          (a, c) => ({
            pending: a.pending + c.pending,
            ack_pending: a.ack_pending + c.ack_pending,
          }),
          { pending: 0, ack_pending: 0 },
        );
  return json({
    now: new Date(now).toISOString(),
    per_minute: { from: new Date((nowMinute - 59) * MINUTE).toISOString(), accepted, completed },
    rates: {
      accepted_per_s: (accepted[accepted.length - 2] ?? 0) / 60,
      completed_per_s: (completed[completed.length - 2] ?? 0) / 60,
    },
    jobs_24h: sumBy(byStatus, "status"),
    callbacks_24h: {
      delivered,
      failed,
      success_rate: delivered + failed === 0 ? null : delivered / (delivered + failed),
    },
    lag: {
      projector_events: projector ? projector.pending + projector.ack_pending : null,
      index_events: position.pending,
      index_age_ms: position.updatedMs > 0 ? Math.max(0, now - position.updatedMs) : null,
    },
    event_store: eventStore,
    consumers: consumers ?? [],
  });
}

/**
 * Pending and un-acked messages of every durable consumer of the hub's streams; null while NATS
 * is away, so the overview (polled by the console) still shows what the index knows in an outage.
 */
async function consumerBacklogs(ctx: AdminContext): Promise<ConsumerBacklog[] | null> {
  if (!ctx.natsConnected()) return null;
  try {
    return await listBacklogs(ctx);
  } catch (err) {
    if (classifyNatsError(err)?.code === "unavailable") return null;
    throw err;
  }
}

interface ConsumerBacklog {
  readonly stream: string;
  readonly name: string;
  readonly pending: number;
  readonly ack_pending: number;
  readonly redelivered: number;
}

async function listBacklogs(ctx: AdminContext): Promise<ConsumerBacklog[]> {
  const out: ConsumerBacklog[] = [];
  for await (const stream of ctx.jsm.streams.list()) {
    const name = stream.config.name;
    if (name.startsWith("KV_")) continue;
    for await (const c of ctx.jsm.consumers.list(name)) {
      out.push({
        stream: name,
        name: c.name,
        pending: c.num_pending,
        ack_pending: c.num_ack_pending,
        redelivered: c.num_redelivered,
      });
    }
  }
  return out;
}
