/** Progress of an eval run: a cli-progress bar on a terminal, a plain line every few seconds otherwise. */
export interface EvalProgress {
  update(finished: number, errors: number): void;
  stop(): void;
}

type Log = NodeJS.WritableStream & { isTTY?: boolean | undefined };

/** A progress display over `total` items; nothing when disabled or when there is nothing to do. */
export async function createEvalProgress(total: number, log: Log, enabled: boolean): Promise<EvalProgress> {
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
        format:
          'eval {bar} {percentage}% | {value}/{total} | {rate}/s | ETA {eta_formatted} | {errors} errors',
        hideCursor: true,
        etaBuffer: 50,
        fps: 10,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { rate: '0.0', errors: 0 });
    return {
      update(finished, errors) {
        bar.update(finished, { rate: perSecond(finished).toFixed(1), errors });
      },
      stop() {
        bar.stop();
      },
    };
  }
  let last = started;
  return {
    update(finished, errors) {
      const now = Date.now();
      if (now - last < 2000 && finished < total) return;
      last = now;
      const rate = perSecond(finished);
      const eta = rate > 0 ? `${Math.ceil((total - finished) / rate)}s` : '?';
      log.write(`eval: ${finished}/${total} (${errors} errors), ${rate.toFixed(1)}/s, ETA ${eta}\n`);
    },
    stop() {},
  };
}
