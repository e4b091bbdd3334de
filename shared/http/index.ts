import { JobNotFoundError, NotFoundError } from "../errors/index.ts";

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

/** Whether every `%XX` in a path decodes, and the bytes they make are UTF-8. */
function pathDecodes(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Refuses a request whose path does not decode (a lone `%`, `%zz`, bytes that are not UTF-8 such
 * as `%ff` or the overlong `%C0%AF`) before any handler sees its parameters: such a parameter
 * names nothing that can exist, so the answer is the 404 an unknown id gets (a job id's own
 * `job_not_found`), with or without credentials, on every surface alike. It is checked on the path
 * as sent because the routers differ: Bun's turns such a parameter into U+FFFD, Elysia's into
 * `null`. One hook per app (`onTransform`), not a check per handler.
 */
export function refuseUndecodablePath(context: {
  readonly request: Request;
  /** Absent on a route without parameters. */
  readonly params?: Readonly<Record<string, string | null | undefined>>;
}): void {
  const params = context.params ?? {};
  const names = Object.keys(params);
  if (names.length === 0) return;
  const undecoded = Object.values(params).includes(null);
  if (!undecoded && pathDecodes(new URL(context.request.url).pathname)) return;
  const detail = "The path is not valid percent-encoded UTF-8, so it names nothing here.";
  throw names.includes("job_id") ? new JobNotFoundError({ detail }) : new NotFoundError({ detail });
}
