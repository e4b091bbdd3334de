/** Time comes in through this, never from `new Date()` deep inside. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests can set and move. */
export function manualClock(
  start: Date | string | number,
): Clock & { advance(ms: number): void; set(t: Date | string | number): void } {
  let t = new Date(start).getTime();
  return {
    now: () => new Date(t),
    advance: (ms) => {
      t += ms;
    },
    set: (value) => {
      t = new Date(value).getTime();
    },
  };
}

export { isIsoInstant, parseIsoMs } from "./iso.ts";
