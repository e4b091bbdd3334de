/**
 * One read at a time, shared by every caller that arrives while it runs, and a bound on how long a
 * caller waits for it: a caller past `timeoutMs` goes on without it (the read goes on, and the next
 * caller after it ends starts a new one). `read` must not reject.
 */
export function createSharedRead(input: {
  readonly read: () => Promise<void>;
  readonly timeoutMs: number;
}): () => Promise<void> {
  let reading: Promise<void> | undefined;
  return async () => {
    reading ??= input.read().finally(() => {
      reading = undefined;
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, input.timeoutMs);
    });
    await Promise.race([reading, late]).finally(() => clearTimeout(timer));
  };
}
