/**
 * The executor process's overall cap: builtin jobs and every HTTP route draw from one pool, so
 * the process never runs more than `size` jobs however many routes it serves.
 */
export interface Slots {
  readonly size: number;
  /** Slots not taken. */
  free(): number;
  /** Takes a slot (the caller checked free() first); returns its release function. */
  take(): () => void;
  /** Resolves when a slot is released. */
  freed(): Promise<void>;
  /** Takes a slot when one is free; undefined otherwise. */
  tryTake(): (() => void) | undefined;
}

/** A counting semaphore without a queue: pull loops ask free() before they fetch. */
export function createSlots(size: number): Slots {
  let taken = 0;
  let waiters: (() => void)[] = [];
  return {
    size,
    free: () => size - taken,
    take() {
      taken++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        taken--;
        const wake = waiters;
        waiters = [];
        for (const w of wake) w();
      };
    },
    freed: () =>
      taken < size ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve)),
    tryTake() {
      return taken < size ? this.take() : undefined;
    },
  };
}
