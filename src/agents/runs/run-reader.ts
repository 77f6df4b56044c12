import { ValidationError } from '../../schema/errors';
import type { RunEvent, RunLogStore, RunRecord, RunStatus } from '../../stores/types';
import { RUN_PAGE, runEnded } from '../../stores/types';
import { runWriterOf } from './run-writer';

type LogStore = RunLogStore;

/** Options of {@link followRun}. */
export interface FollowRunOptions {
  /** Events after this number (0: from the first). @default 0 */
  after?: number | undefined;
  /** Stops following (the iterator ends). */
  signal?: AbortSignal | undefined;
}

/** Shortest and longest wait between two reads of a run nothing told us about, in ms. */
const POLL_MIN_MS = 25;
const POLL_MAX_MS = 1_000;
/** Longest wait when the store tells about every process's writes (the poll is only a safety net then). */
const POLL_SHARED_MAX_MS = 5_000;

/** Whether a run rests: ended, or waiting for a decision (its log grows no more until it goes on). */
export function runRests(status: RunStatus): boolean {
  return status === 'waiting' || runEnded(status);
}

/** The error of a run id the store does not have (expired, deleted, or never made). */
export function unknownRun(runId: string): ValidationError {
  return new ValidationError({
    field: 'runId',
    message: `no run ${JSON.stringify(runId)} (it never existed, or its retention passed)`,
  });
}

/**
 * A run's events from `after` on, as they are written, until the run rests (it ended, or waits for a
 * decision) and its last event was given; any number of readers at once, in this process or others. Events
 * written in this process come from the writer's feed; others from the store, read again whenever the store
 * tells of a change (`watchRun`), and every so often anyway (backing off while nothing changes) for writes
 * of other processes it cannot tell of. Throws a `ValidationError` (field `runId`) for a run the store does
 * not have; a run dropped meanwhile ends the iteration. Returns the run as last read.
 */
export async function* followRun(
  store: LogStore,
  namespace: string,
  runId: string,
  options: FollowRunOptions = {},
): AsyncGenerator<RunEvent, RunRecord | undefined, undefined> {
  const { signal } = options;
  const pages = followRunPages(store, namespace, runId, options);
  try {
    for (;;) {
      const step = await pages.next();
      if (step.done) return step.value;
      for (const event of step.value) {
        // Aborted: the next page's read sees it, and ends.
        if (signal?.aborted) break;
        yield event;
      }
    }
  } finally {
    await pages.return(undefined);
  }
}

/**
 * {@link followRun} a page at a time: the events read at once (from the feed, or a page of the store), in order,
 * never empty. What a relay that writes many events takes: one step of the reader per page, not per event.
 * Checks `signal` between pages.
 */
export async function* followRunPages(
  store: LogStore,
  namespace: string,
  runId: string,
  options: FollowRunOptions = {},
): AsyncGenerator<readonly RunEvent[], RunRecord | undefined, undefined> {
  const { signal } = options;
  let cursor = options.after ?? 0;
  const writer = runWriterOf(store);
  let dirty = true;
  let wake: (() => void) | undefined;
  const touch = () => {
    dirty = true;
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const stopStore = store.watchRun(namespace, runId, touch);
  const stopLocal = writer.local.watch(namespace, runId, touch);
  signal?.addEventListener('abort', touch);
  const longest = store.watchesOtherProcesses ? POLL_SHARED_MAX_MS : POLL_MAX_MS;
  let delay = POLL_MIN_MS;
  let record: RunRecord | undefined;
  let first = true;
  try {
    for (;;) {
      if (signal?.aborted) return record;
      dirty = false;
      let events: RunEvent[];
      let status: RunStatus;
      let lastSeq: number;
      const feed = writer.feed(namespace, runId);
      if (feed?.covers(cursor)) {
        events = feed.after(cursor);
        status = feed.status;
        lastSeq = feed.lastSeq;
      } else {
        const page = await store.readRunEvents(namespace, runId, cursor, RUN_PAGE);
        if (page === undefined) {
          if (first) throw unknownRun(runId);
          return record;
        }
        record = page.run;
        events = page.events;
        status = page.run.status;
        lastSeq = page.run.lastSeq;
      }
      first = false;
      if (events.length > 0) {
        yield events;
        cursor = events[events.length - 1]!.seq;
        delay = POLL_MIN_MS;
        continue;
      }
      if (runRests(status) && cursor >= lastSeq) {
        if (record === undefined || record.lastSeq < lastSeq) record = await store.readRun(namespace, runId);
        return record;
      }
      if (dirty) continue;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(touch, delay);
      });
      clearTimeout(timer);
      delay = Math.min(delay * 2, longest);
    }
  } finally {
    stopStore();
    stopLocal();
    signal?.removeEventListener('abort', touch);
  }
}
