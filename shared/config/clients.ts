import type { ClientConfig, ClientEntry } from "./schema.ts";

/** A credential entry as configured: a plain value, or one with a retirement date. */
type Retiring<K extends string> = string | ({ readonly retire_at: string } & Record<K, string>);

/**
 * Epoch milliseconds of an RFC 3339 time, or NaN when it is not one: strict about the calendar
 * (Date.parse would take 2030-02-31 as 3 March in some engines).
 */
export function rfc3339Ms(text: string): number {
  const m =
    /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.exec(
      text,
    );
  if (!m) return Number.NaN;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((v) => Number(v ?? 0));
  const days = new Date(Date.UTC(year as number, month as number, 0)).getUTCDate();
  if (
    (month as number) < 1 ||
    (month as number) > 12 ||
    (day as number) < 1 ||
    (day as number) > days ||
    (hour as number) > 23 ||
    (minute as number) > 59 ||
    (second as number) > 59
  ) {
    return Number.NaN;
  }
  return Date.parse(text);
}

/** The value of an entry and the epoch millisecond it retires at (Infinity: never). */
export function credential<K extends string>(
  entry: Retiring<K>,
  key: K,
): { readonly value: string; readonly retireAtMs: number } {
  if (typeof entry === "string") return { value: entry, retireAtMs: Number.POSITIVE_INFINITY };
  return { value: entry[key], retireAtMs: rfc3339Ms(entry.retire_at) };
}

/** The entries of a list still active at `nowMs`, as plain values. */
function active<K extends string>(
  entries: readonly Retiring<K>[],
  key: K,
  nowMs: number,
): string[] {
  const values: string[] = [];
  for (const entry of entries) {
    const { value, retireAtMs } = credential(entry, key);
    if (nowMs < retireAtMs) values.push(value);
  }
  return values;
}

/** A client with only the token hashes and callback secrets active at `nowMs`. */
export function activeClient(entry: ClientEntry, nowMs: number): ClientConfig {
  return {
    ...entry,
    token_sha256: active(entry.token_sha256, "sha256", nowMs),
    callback_secrets: active(entry.callback_secrets, "secret", nowMs),
  };
}

/**
 * The clients of the running configuration. Lookups see only credentials that have not retired
 * yet, so a retirement date takes effect at its moment without a reload; `replace` swaps in the
 * clients of a reloaded configuration (SIGHUP or a changed file).
 */
export interface ClientDirectory {
  client(id: string): ClientConfig | undefined;
  /** Every configured client as written (retirement dates included). */
  entries(): readonly ClientEntry[];
  replace(entries: readonly ClientEntry[]): void;
}

/** The first retirement after `nowMs` among a client's credentials (Infinity: none). */
function nextRetirementMs(entry: ClientEntry, nowMs: number): number {
  let next = Number.POSITIVE_INFINITY;
  const consider = (retireAtMs: number) => {
    if (retireAtMs > nowMs && retireAtMs < next) next = retireAtMs;
  };
  for (const e of entry.token_sha256) consider(credential(e, "sha256").retireAtMs);
  for (const e of entry.callback_secrets) consider(credential(e, "secret").retireAtMs);
  return next;
}

export function createClientDirectory(
  initial: readonly ClientEntry[],
  now: () => number = Date.now,
): ClientDirectory {
  let byId = new Map(initial.map((c) => [c.id, c]));
  let all = initial;
  // The active view of an entry is the same until its next retirement: built once per entry and
  // period, not per lookup (every request and every callback attempt looks its client up).
  const views = new WeakMap<
    ClientEntry,
    { client: ClientConfig; fromMs: number; untilMs: number }
  >();
  return {
    client(id) {
      const entry = byId.get(id);
      if (entry === undefined) return undefined;
      const nowMs = now();
      const cached = views.get(entry);
      if (cached !== undefined && nowMs >= cached.fromMs && nowMs < cached.untilMs) {
        return cached.client;
      }
      const client = activeClient(entry, nowMs);
      views.set(entry, { client, fromMs: nowMs, untilMs: nextRetirementMs(entry, nowMs) });
      return client;
    },
    entries: () => all,
    replace(entries) {
      all = entries;
      byId = new Map(entries.map((c) => [c.id, c]));
    },
  };
}
