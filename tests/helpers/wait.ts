/**
 * Polls `probe` until it returns a value other than undefined/false, or fails after `timeoutMs`
 * with `what` in the message. Used instead of fixed sleeps.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 10_000, intervalMs = 20 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as T;
    } catch (err) {
      lastError = err;
    }
    await Bun.sleep(intervalMs);
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ""}`,
  );
}
