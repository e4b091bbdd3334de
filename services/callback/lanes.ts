/** Something to run in a destination's lane. */
export interface LaneItem {
  /** The lane: scheme, host and port of the callback URL. */
  readonly destination: string;
}

export interface LanesOptions<T extends LaneItem> {
  /** Items running at once over every lane. */
  readonly concurrency: number;
  /** Items running at once in one lane. */
  readonly perDestination: number;
  /** Items one lane may hold waiting in memory; beyond it, `overflow` takes them. */
  readonly maxWaitingPerDestination: number;
  /** Items all lanes together may hold waiting. */
  readonly maxWaiting: number;
  readonly run: (item: T) => Promise<void>;
  /** Called for an item no lane can hold: the caller puts it somewhere durable. */
  readonly overflow: (item: T) => void;
}

export interface Lanes<T extends LaneItem> {
  submit(item: T): void;
  /** Items waiting in memory (their messages need keep-alives). */
  waiting(): Iterable<T>;
  readonly active: number;
  /** About how long an item added to this destination's lane now would wait (ms). */
  estimatedWaitMs(destination: string): number;
  /** Removes and returns every waiting item (on stop). */
  drain(): T[];
  /** Resolves when nothing runs and nothing waits. */
  idle(): Promise<void>;
}

interface Lane<T> {
  readonly key: string;
  running: number;
  queue: T[];
  head: number;
  /** Moving average of how long one item took in this lane (ms). */
  averageMs: number;
}

/**
 * Per-destination lanes under a global cap, so one slow or dead receiver cannot delay callbacks
 * to healthy ones: a lane never runs more than `perDestination` items, and a lane that is full
 * waits without taking a global slot. When a global slot frees, lanes that were waiting for one
 * get it in turn (first come, first served), so a busy lane cannot starve a quiet one.
 */
export function createLanes<T extends LaneItem>(options: LanesOptions<T>): Lanes<T> {
  const lanes = new Map<string, Lane<T>>();
  /** Lanes with waiting items and lane capacity, waiting for a global slot. */
  const hungry: Lane<T>[] = [];
  let active = 0;
  let waitingTotal = 0;
  let idleWaiters: (() => void)[] = [];

  const laneOf = (key: string): Lane<T> => {
    let lane = lanes.get(key);
    if (lane === undefined) {
      lane = { key, running: 0, queue: [], head: 0, averageMs: 0 };
      lanes.set(key, lane);
    }
    return lane;
  };
  const waitingIn = (lane: Lane<T>) => lane.queue.length - lane.head;
  const canRun = (lane: Lane<T>) => lane.running < options.perDestination;

  const start = (lane: Lane<T>, item: T) => {
    lane.running++;
    active++;
    const started = performance.now();
    void options
      .run(item)
      .catch(() => undefined)
      .finally(() => {
        const took = performance.now() - started;
        lane.averageMs = lane.averageMs === 0 ? took : lane.averageMs * 0.9 + took * 0.1;
        lane.running--;
        active--;
        refill(lane);
      });
  };

  const takeNext = (lane: Lane<T>): T | undefined => {
    if (waitingIn(lane) === 0) return undefined;
    const item = lane.queue[lane.head] as T;
    lane.head++;
    waitingTotal--;
    if (lane.head > 1024 && lane.head * 2 > lane.queue.length) {
      lane.queue = lane.queue.slice(lane.head);
      lane.head = 0;
    }
    return item;
  };

  const refill = (freed: Lane<T>) => {
    if (waitingIn(freed) > 0 && !hungry.includes(freed)) hungry.push(freed);
    while (active < options.concurrency && hungry.length > 0) {
      const lane = hungry.shift() as Lane<T>;
      if (!canRun(lane)) continue;
      const item = takeNext(lane);
      if (item === undefined) continue;
      start(lane, item);
      if (waitingIn(lane) > 0) hungry.push(lane);
    }
    if (freed.running === 0 && waitingIn(freed) === 0) lanes.delete(freed.key);
    if (active === 0 && waitingTotal === 0) {
      const wake = idleWaiters;
      idleWaiters = [];
      for (const resolve of wake) resolve();
    }
  };

  return {
    submit(item) {
      const lane = laneOf(item.destination);
      if (canRun(lane) && active < options.concurrency && waitingIn(lane) === 0) {
        start(lane, item);
        return;
      }
      if (
        waitingIn(lane) >= options.maxWaitingPerDestination ||
        waitingTotal >= options.maxWaiting
      ) {
        if (lane.running === 0 && waitingIn(lane) === 0) lanes.delete(lane.key);
        options.overflow(item);
        return;
      }
      lane.queue.push(item);
      waitingTotal++;
      if (canRun(lane) && !hungry.includes(lane)) hungry.push(lane);
    },
    *waiting() {
      for (const lane of lanes.values()) {
        for (let i = lane.head; i < lane.queue.length; i++) yield lane.queue[i] as T;
      }
    },
    get active() {
      return active;
    },
    estimatedWaitMs(destination) {
      const lane = lanes.get(destination);
      if (lane === undefined) return 0;
      return ((waitingIn(lane) + 1) * lane.averageMs) / options.perDestination;
    },
    drain() {
      const drained: T[] = [];
      for (const lane of lanes.values()) {
        for (let i = lane.head; i < lane.queue.length; i++) drained.push(lane.queue[i] as T);
        lane.queue = [];
        lane.head = 0;
        if (lane.running === 0) lanes.delete(lane.key);
      }
      waitingTotal = 0;
      hungry.length = 0;
      return drained;
    },
    idle() {
      if (active === 0 && waitingTotal === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
}

/** The lane of a callback URL: scheme, host and port (not the path: one receiver, one lane). */
export function destinationOf(url: string): string {
  try {
    const u = new URL(url);
    const port = u.port || (u.protocol === "https:" ? "443" : "80");
    return `${u.protocol}//${u.hostname.toLowerCase()}:${port}`;
  } catch {
    return "invalid";
  }
}

/**
 * {@link destinationOf} remembered per URL (the oldest forgotten beyond `maxEntries`): every
 * delivery needs its lane, and a service calls back the same few URLs over and over.
 */
export function createDestinationCache(maxEntries = 1_024): (url: string) => string {
  const known = new Map<string, string>();
  return (url) => {
    const found = known.get(url);
    if (found !== undefined) return found;
    const destination = destinationOf(url);
    known.set(url, destination);
    if (known.size > maxEntries) known.delete(known.keys().next().value as string);
    return destination;
  };
}
