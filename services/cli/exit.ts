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
          if (stream.writableEnded) return resolve();
          stream.once("error", () => resolve());
          stream.end(() => resolve());
        }),
    ),
  );
  process.exit(code);
}
