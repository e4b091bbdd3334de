/**
 * Exits once what was written to stdout and stderr has reached them. process.exit alone drops
 * what Bun still queues for a pipe (a compile's last lines, the end of an `events` export read
 * by a slow consumer); write("", cb) and writableLength do not wait for it, end() does. A reader
 * that went away (EPIPE) ends the wait too.
 */
export async function exitWhenFlushed(code: number): Promise<never> {
  await Promise.all(
    [process.stdout, process.stderr].map(
      (stream) =>
        new Promise<void>((resolve) => {
          if (stream.writableEnded || stream.destroyed) return resolve();
          stream.once("error", () => resolve());
          stream.end(() => resolve());
        }),
    ),
  );
  process.exit(code);
}

/** The part of a writable stream {@link endWhenReaderGoes} listens to. */
interface ErrorSource {
  on(event: "error", listener: (err: Error) => void): unknown;
}

export interface ReaderGoneDeps {
  /** The command's standard output. */
  readonly stdout: ErrorSource;
  readonly stderr: (text: string) => void;
  /** Ends the process with this code. */
  readonly exit: (code: number) => void;
}

/**
 * A one-shot command whose reader went away (`switchyard events | head -3`) ends at once with
 * exit 0 and no message, as a Unix tool ended by SIGPIPE does in a pipeline: there is no one
 * left to read the rest. Bun reports the closed pipe as an `error` event on stdout (EPIPE)
 * after the write returned; without a listener that event is an uncaught error, printed with
 * its stack, exit 1. Not for `up` and `serve`: a hub whose log reader goes away keeps running.
 */
export function endWhenReaderGoes(deps: ReaderGoneDeps): void {
  let ending = false;
  deps.stdout.on("error", (err) => {
    if (ending) return;
    ending = true;
    const code = (err as { code?: unknown }).code;
    if (code === "EPIPE") deps.exit(0);
    else {
      deps.stderr(`switchyard: standard output failed: ${err.message}\n`);
      deps.exit(1);
    }
  });
}
