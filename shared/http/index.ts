/** A server could not bind its address; the message names the address and its config keys. */
export class ListenError extends Error {
  readonly code = "listen_failed";
  constructor(where: string, cause: unknown) {
    super(`cannot listen on ${where}: ${(cause as Error).message}`, { cause });
    this.name = "ListenError";
  }
}

/** Runs `listen`, turning Bun's bind failure into a {@link ListenError}. */
export function listenOrExplain(listen: () => unknown, where: string): void {
  try {
    listen();
  } catch (err) {
    throw new ListenError(where, err);
  }
}
export * from "./json-body.ts";
