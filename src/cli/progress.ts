/** Progress of a `batch` or `eval` run: a cli-progress bar on a terminal, a plain line every 2 s otherwise. */
export interface Progress {
  /** `finished` items so far, `bad` of them failed. */
  update(finished: number, bad: number): void;
  stop(): void;
}

type Log = NodeJS.WritableStream & { isTTY?: boolean | undefined };

/**
 * A progress display over `total` items (`batch 3/10 (1 failed)`: `command`, then `badLabel`); nothing when
 * disabled or when there is nothing to do. cli-progress is imported only for a terminal.
 */
export async function createProgress(
  command: string,
  badLabel: string,
  total: number,
  log: Log,
  enabled: boolean,
): Promise<Progress> {
  if (!enabled || total === 0) return { update() {}, stop() {} };
  const started = Date.now();
  const perSecond = (finished: number) => {
    const seconds = (Date.now() - started) / 1000;
    return seconds > 0 ? finished / seconds : 0;
  };
  if (log.isTTY) {
    const { default: cliProgress } = await import('cli-progress');
    const bar = new cliProgress.SingleBar(
      {
        stream: log,
        format: `${command} {bar} {percentage}% | {value}/{total} | {rate}/s | ETA {eta_formatted} | {bad} ${badLabel}`,
        hideCursor: true,
        etaBuffer: 50,
        fps: 10,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { rate: '0.0', bad: 0 });
    return {
      update(finished, bad) {
        bar.update(finished, { rate: perSecond(finished).toFixed(1), bad });
      },
      stop() {
        bar.stop();
      },
    };
  }
  let last = started;
  return {
    update(finished, bad) {
      const now = Date.now();
      if (now - last < 2000 && finished < total) return;
      last = now;
      const rate = perSecond(finished);
      const eta = rate > 0 ? `${Math.ceil((total - finished) / rate)}s` : '?';
      log.write(`${command}: ${finished}/${total} (${bad} ${badLabel}), ${rate.toFixed(1)}/s, ETA ${eta}\n`);
    },
    stop() {},
  };
}
