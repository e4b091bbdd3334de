/**
 * nats-server's own counters, read from its monitoring endpoint (`-m <port>`), so the benchmark
 * can say what one job costs JetStream without asking the JetStream API (whose calls it would
 * count itself). Three pages are read:
 *
 * - `/jsz?accounts=true&streams=true&consumers=true&config=true`: `api.total` (JetStream API
 *   calls the server's API router handled: stream and consumer info, create, `STREAM.MSG.GET`
 *   including last-by-subject reads), and per stream `state.last_seq` (messages ever stored) and
 *   `state.bytes`, per consumer `delivered.consumer_seq` (deliveries, redeliveries included),
 *   `num_pending` and `num_ack_pending`;
 * - `/subsz?subs=1`: every subscription with the number of messages it received, including the
 *   server's internal ones: `$JS.ACK.<stream>.<consumer>.…` (every ack, nak, term and in-progress a
 *   consumer received: nats-server keeps no ack counter of its own), `$JS.API.DIRECT.GET.<stream>…`
 *   (direct gets, which `api.total` does not count: KV reads go this way),
 *   `$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>` (pull requests, also not in `api.total`) and
 *   each stream's own subjects (publishes it received, stored or refused);
 * - `/varz`: the server's whole traffic with its clients, messages and bytes each way (publishes,
 *   acks and requests in; deliveries, PubAcks, replies and heartbeats out).
 *
 * Everything here except the fetches is pure. Counters that went down (a consumer or a
 * subscription that was deleted and made again) count from zero.
 */

export interface ConsumerState {
  readonly stream: string;
  readonly name: string;
  readonly delivered: number;
  readonly pending: number;
  readonly ackPending: number;
  /**
   * The consumer acknowledges what it is delivered (ack policy explicit or all). A consumer that
   * does not (a KV watch, an ordered reader) holds no work: what it has pending is only not yet
   * pushed, to a watcher that may be gone (nats.js leaves a stopped watch's consumer to expire
   * after its 5-min inactive threshold).
   */
  readonly acks: boolean;
}

export interface StreamState {
  readonly stored: number;
  readonly bytes: number;
  readonly messages: number;
  readonly subjects: readonly string[];
}

export interface JszSnapshot {
  readonly apiTotal: number;
  readonly apiErrors: number;
  readonly streams: Readonly<Record<string, StreamState>>;
  /** Keyed by `<stream>/<consumer>`. */
  readonly consumers: Readonly<Record<string, ConsumerState>>;
}

/** Messages received per subscription subject (summed over connections), outside $SYS. */
export type SubCounts = Readonly<Record<string, number>>;

/** nats-server's whole traffic so far (`/varz`): messages and bytes from and to its clients. */
export interface Traffic {
  readonly inMsgs: number;
  readonly outMsgs: number;
  readonly inBytes: number;
  readonly outBytes: number;
}

export interface JetStreamSnapshot {
  readonly jsz: JszSnapshot;
  readonly subs: SubCounts;
  readonly traffic: Traffic;
}

export interface StreamCost {
  /** Messages stored (last_seq delta). */
  readonly stored: number;
  /** Net growth of the stream's bytes (a KV bucket's older revisions are replaced). */
  readonly bytes: number;
  /** Publishes the stream received on its subjects, stored or refused (dedup, expected seq). */
  readonly publishes: number;
  readonly directGets: number;
}

export interface ConsumerCost {
  readonly deliveries: number;
  /** Messages on the consumer's ack subject: acks, naks, terms and in-progress together. */
  readonly acks: number;
  readonly pulls: number;
}

export interface CostTotals {
  readonly stored: number;
  /** Stored in streams that are not KV buckets (events, tasks, ...). */
  readonly storedStreams: number;
  /** Stored in KV buckets (KV_*): view and index writes. */
  readonly storedKv: number;
  readonly bytes: number;
  readonly publishes: number;
  readonly deliveries: number;
  readonly acks: number;
  readonly directGets: number;
  readonly pulls: number;
  /** api.total delta: API calls the router handled (info, create, STREAM.MSG.GET, ...). */
  readonly apiCalls: number;
  /**
   * NATS messages nats-server received from its clients (publishes, acks, pull and API requests)
   * and sent them (deliveries, PubAcks, replies, heartbeats): `/varz` in_msgs and out_msgs.
   */
  readonly messagesIn: number;
  readonly messagesOut: number;
  /** Their bytes (`/varz` in_bytes and out_bytes). */
  readonly bytesIn: number;
  readonly bytesOut: number;
}

export interface JetStreamCost {
  readonly totals: CostTotals;
  readonly streams: Readonly<Record<string, StreamCost>>;
  readonly consumers: Readonly<Record<string, ConsumerCost>>;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === "object" ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** The monitoring port nats-server logged (`Starting http monitor on <host>:<port>`). */
export function monitorPort(serverOutput: string): number | undefined {
  const match = /Starting http monitor on [^\s]*:(\d+)/.exec(serverOutput);
  return match?.[1] ? Number(match[1]) : undefined;
}

export function parseJsz(body: unknown): JszSnapshot {
  const root = obj(body);
  const api = obj(root.api);
  const streams: Record<string, StreamState> = {};
  const consumers: Record<string, ConsumerState> = {};
  for (const account of arr(root.account_details)) {
    for (const s of arr(obj(account).stream_detail)) {
      const detail = obj(s);
      const name = String(detail.name ?? "");
      const state = obj(detail.state);
      streams[name] = {
        stored: num(state.last_seq),
        bytes: num(state.bytes),
        messages: num(state.messages),
        subjects: arr(obj(detail.config).subjects).map(String),
      };
      for (const c of arr(detail.consumer_detail)) {
        const consumer = obj(c);
        const cname = String(consumer.name ?? "");
        consumers[`${name}/${cname}`] = {
          stream: name,
          name: cname,
          delivered: num(obj(consumer.delivered).consumer_seq),
          pending: num(consumer.num_pending),
          ackPending: num(consumer.num_ack_pending),
          acks: obj(consumer.config).ack_policy !== "none",
        };
      }
    }
  }
  return { apiTotal: num(api.total), apiErrors: num(api.errors), streams, consumers };
}

export function parseVarz(body: unknown): Traffic {
  const v = obj(body);
  return {
    inMsgs: num(v.in_msgs),
    outMsgs: num(v.out_msgs),
    inBytes: num(v.in_bytes),
    outBytes: num(v.out_bytes),
  };
}

export function parseSubsz(body: unknown): SubCounts {
  const counts: Record<string, number> = {};
  for (const s of arr(obj(body).subscriptions_list)) {
    const sub = obj(s);
    if (sub.account === "$SYS") continue;
    const subject = String(sub.subject ?? "");
    counts[subject] = (counts[subject] ?? 0) + num(sub.msgs);
  }
  return counts;
}

const grew = (after: number, before: number | undefined) =>
  before === undefined || after < before ? after : after - before;

/** Every sub-counter delta whose subject starts with `prefix`, keyed by what follows it. */
function subDeltas(before: SubCounts, after: SubCounts, prefix: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const [subject, n] of Object.entries(after)) {
    if (!subject.startsWith(prefix)) continue;
    const rest = subject.slice(prefix.length);
    out.set(rest, (out.get(rest) ?? 0) + grew(n, before[subject]));
  }
  return out;
}

/** Sums deltas whose key (tokens after the prefix) starts with the given tokens. */
function sumFor(deltas: Map<string, number>, ...tokens: string[]): number {
  let sum = 0;
  for (const [rest, n] of deltas) {
    const parts = rest.split(".");
    if (tokens.every((t, i) => parts[i] === t)) sum += n;
  }
  return sum;
}

/** What happened between two snapshots, per stream, per consumer and in total. */
export function diffSnapshots(before: JetStreamSnapshot, after: JetStreamSnapshot): JetStreamCost {
  const acks = subDeltas(before.subs, after.subs, "$JS.ACK.");
  const pulls = subDeltas(before.subs, after.subs, "$JS.API.CONSUMER.MSG.NEXT.");
  const gets = subDeltas(before.subs, after.subs, "$JS.API.DIRECT.GET.");
  const streams: Record<string, StreamCost> = {};
  for (const [name, s] of Object.entries(after.jsz.streams)) {
    const b = before.jsz.streams[name];
    streams[name] = {
      stored: grew(s.stored, b?.stored),
      bytes: s.bytes - (b?.bytes ?? 0),
      publishes: s.subjects.reduce(
        (sum, subject) => sum + grew(after.subs[subject] ?? 0, before.subs[subject]),
        0,
      ),
      directGets: sumFor(gets, name),
    };
  }
  const consumers: Record<string, ConsumerCost> = {};
  for (const [key, c] of Object.entries(after.jsz.consumers)) {
    consumers[key] = {
      deliveries: grew(c.delivered, before.jsz.consumers[key]?.delivered),
      acks: sumFor(acks, c.stream, c.name),
      pulls: sumFor(pulls, c.stream, c.name),
    };
  }
  const sum = <T>(values: Iterable<T>, pick: (v: T) => number) => {
    let total = 0;
    for (const v of values) total += pick(v);
    return total;
  };
  const streamList = Object.entries(streams);
  const isKv = ([name]: [string, StreamCost]) => name.startsWith("KV_");
  const totals: CostTotals = {
    stored: sum(streamList, ([, s]) => s.stored),
    storedStreams: sum(
      streamList.filter((e) => !isKv(e)),
      ([, s]) => s.stored,
    ),
    storedKv: sum(streamList.filter(isKv), ([, s]) => s.stored),
    bytes: sum(streamList, ([, s]) => s.bytes),
    publishes: sum(streamList, ([, s]) => s.publishes),
    deliveries: sum(Object.values(consumers), (c) => c.deliveries),
    acks: sum(Object.values(consumers), (c) => c.acks),
    directGets: sum(streamList, ([, s]) => s.directGets),
    pulls: sum(Object.values(consumers), (c) => c.pulls),
    apiCalls: grew(after.jsz.apiTotal, before.jsz.apiTotal),
    messagesIn: grew(after.traffic.inMsgs, before.traffic.inMsgs),
    messagesOut: grew(after.traffic.outMsgs, before.traffic.outMsgs),
    bytesIn: grew(after.traffic.inBytes, before.traffic.inBytes),
    bytesOut: grew(after.traffic.outBytes, before.traffic.outBytes),
  };
  return { totals, streams, consumers };
}

/** Each total divided by `per` (jobs or requests), rounded to 2 digits; NaN when per is 0. */
export function perUnit(cost: JetStreamCost, per: number): Record<keyof CostTotals, number> {
  const out = {} as Record<keyof CostTotals, number>;
  for (const [key, value] of Object.entries(cost.totals) as [keyof CostTotals, number][]) {
    out[key] = per > 0 ? Math.round((value / per) * 100) / 100 : Number.NaN;
  }
  return out;
}

export interface Backlog {
  readonly consumer: string;
  readonly pending: number;
  readonly ackPending: number;
}

/**
 * Streams whose messages are timers, not backlog: a deadline timer waits (parked, ack-pending)
 * until its job's deadline, minutes away, by design; no scenario's work is left in it.
 */
const TIMER_STREAMS = new Set(["SWITCHYARD_DEADLINES"]);

/**
 * Consumers (on every stream but timers) with anything pending or unacknowledged; consumers that
 * acknowledge nothing (watches) are not backlog.
 */
export function undrained(jsz: JszSnapshot): Backlog[] {
  return Object.entries(jsz.consumers)
    .filter(([key, c]) => c.acks && !TIMER_STREAMS.has(key.split("/")[0] ?? ""))
    .filter(([, c]) => c.pending > 0 || c.ackPending > 0)
    .map(([consumer, c]) => ({ consumer, pending: c.pending, ackPending: c.ackPending }));
}

/** Messages in and out of each named client connection (`/connz`), summed per name. */
export type ConnMessages = Readonly<Record<string, { readonly in: number; readonly out: number }>>;

export function parseConnz(body: unknown): ConnMessages {
  const out: Record<string, { in: number; out: number }> = {};
  const conns = (body as { connections?: unknown[] }).connections ?? [];
  for (const raw of conns) {
    const c = raw as { name?: unknown; in_msgs?: unknown; out_msgs?: unknown };
    const name = typeof c.name === "string" && c.name !== "" ? c.name : "(unnamed)";
    const seen = out[name] ?? { in: 0, out: 0 };
    seen.in += typeof c.in_msgs === "number" ? c.in_msgs : 0;
    seen.out += typeof c.out_msgs === "number" ? c.out_msgs : 0;
    out[name] = seen;
  }
  return out;
}

/** Reads the monitoring endpoint at `base` (http://127.0.0.1:<port>). */
export function createJetStreamMonitor(base: string) {
  const get = async (path: string): Promise<unknown> => {
    const res = await fetch(`${base}${path}`);
    if (!res.ok) throw new Error(`nats-server monitor ${path}: HTTP ${res.status}`);
    return res.json();
  };
  const jsz = async () =>
    parseJsz(await get("/jsz?accounts=true&streams=true&consumers=true&config=true"));
  return {
    jsz,
    /** Messages per named connection: what each process sent (in) and was sent (out). */
    connz: async () => parseConnz(await get("/connz?limit=1024")),
    async snapshot(): Promise<JetStreamSnapshot> {
      const [j, s, v] = await Promise.all([
        jsz(),
        get("/subsz?subs=1&limit=1000000"),
        get("/varz"),
      ]);
      return { jsz: j, subs: parseSubsz(s), traffic: parseVarz(v) };
    },
  };
}

export type JetStreamMonitor = ReturnType<typeof createJetStreamMonitor>;
