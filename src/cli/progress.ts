/**
 * A one-line progress report, hand-rolled rather than a dependency: the import needs counts and
 * a rate, nothing more, and 30 lines avoid a package (and its lock entries) for that. On a
 * terminal the line is redrawn in place; otherwise (a pipe, a log file, CI) a plain line is
 * written every `plainEveryMs`, so logs stay readable.
 */
export interface ProgressCounts {
  read: number;
  applied: number;
  unchanged: number;
  refused: number;
}

export function progressReporter(out: NodeJS.WritableStream & { isTTY?: boolean }, label: string, counts: () => ProgressCounts, plainEveryMs = 5000) {
  const started = Date.now();
  const tty = out.isTTY === true;
  const line = () => {
    const c = counts();
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    return `${label}: ${c.read} read, ${c.applied} applied, ${c.unchanged} unchanged, ${c.refused} refused, ${(c.read / seconds).toFixed(0)} lines/s, ${seconds.toFixed(0)} s`;
  };
  const draw = () => out.write(tty ? `\r\x1b[2K${line()}` : `${line()}\n`);
  const timer = setInterval(draw, tty ? 200 : plainEveryMs);
  timer.unref();
  return {
    /** Writes a message on its own line without breaking the redrawn one. */
    note(message: string) {
      out.write(tty ? `\r\x1b[2K${message}\n` : `${message}\n`);
    },
    stop() {
      clearInterval(timer);
      if (tty) out.write(`\r\x1b[2K`);
    },
  };
}
