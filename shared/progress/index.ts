/** Where a progress line goes: a terminal gets a live line, anything else nothing. */
export interface ProgressSink {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

export interface Progress {
  /** Counts `n` more items done. */
  tick(n?: number): void;
  /** Ends the line (on a TTY). */
  done(): void;
}

/**
 * A progress line with a rate and, when the total is known, an ETA, for CLI commands that can
 * run long. Quiet unless `sink` is a TTY, so pipes and logs stay clean.
 */
export function createProgress(options: {
  readonly label: string;
  readonly total?: number;
  readonly sink: ProgressSink;
  readonly now?: () => number;
}): Progress {
  const now = options.now ?? Date.now;
  const started = now();
  let count = 0;
  let lastDraw = 0;
  const tty = options.sink.isTTY === true;
  const draw = () => {
    const seconds = Math.max(0.001, (now() - started) / 1000);
    const rate = count / seconds;
    const total = options.total;
    const eta =
      total !== undefined && rate > 0 ? `, ETA ${Math.ceil((total - count) / rate)} s` : "";
    const of = total === undefined ? "" : ` of ${total}`;
    options.sink.write(`\r${options.label}: ${count}${of} (${Math.round(rate)}/s${eta})   `);
  };
  return {
    tick(n = 1) {
      count += n;
      if (!tty || now() - lastDraw < 200) return;
      lastDraw = now();
      draw();
    },
    done() {
      if (!tty) return;
      draw();
      options.sink.write("\n");
    },
  };
}
