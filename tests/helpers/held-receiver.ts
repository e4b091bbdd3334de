/**
 * A callback receiver on 127.0.0.1 that holds every request until it is released (then 204), or
 * answers at once while open.
 */
export interface HeldReceiver {
  readonly url: string;
  /** Requests held now: received and not released yet. */
  waiting(): number;
  /** Answers every request held now. */
  release(): void;
  /** Answers every request held now and every later one at once, until `hold()`. */
  open(): void;
  /** Holds every later request again. */
  hold(): void;
  stop(): void;
}

export function heldReceiver(): HeldReceiver {
  const held: (() => void)[] = [];
  let holding = true;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch() {
      if (holding) await new Promise<void>((resolve) => held.push(resolve));
      return new Response(null, { status: 204 });
    },
  });
  const release = () => {
    for (const resolve of held.splice(0)) resolve();
  };
  return {
    url: `http://127.0.0.1:${server.port}/cb`,
    waiting: () => held.length,
    release,
    open: () => {
      holding = false;
      release();
    },
    hold: () => {
      holding = true;
    },
    stop: () => server.stop(true),
  };
}
