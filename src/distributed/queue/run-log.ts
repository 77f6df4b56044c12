import type { RedisStore } from '../../stores/redis-store';
import type {
  CreatedRun,
  CreateRunOptions,
  RunEventPage,
  RunListOptions,
  RunLogStore,
  RunPage,
  RunRecord,
  RunWrite,
  RunWritten,
} from '../../stores/types';

/**
 * The run logs of a queue, as the caller's side reads and writes them: the RedisStore of the queue's connection,
 * reached once it is open (each method waits for it). A watch made before then starts when it is open, and
 * tells its listener once then (a reader reads again, and misses nothing).
 */
export class QueueRunLog implements RunLogStore {
  readonly description: string;
  readonly watchesOtherProcesses = true;
  readonly #store: () => Promise<RedisStore>;

  constructor(description: string, store: () => Promise<RedisStore>) {
    this.description = description;
    this.#store = store;
  }

  async createRun(namespace: string, runId: string, options: CreateRunOptions): Promise<CreatedRun> {
    return (await this.#store()).createRun(namespace, runId, options);
  }

  async appendRuns(writes: readonly RunWrite[]): Promise<RunWritten[]> {
    return (await this.#store()).appendRuns(writes);
  }

  async readRun(namespace: string, runId: string): Promise<RunRecord | undefined> {
    return (await this.#store()).readRun(namespace, runId);
  }

  async readRunEvents(
    namespace: string,
    runId: string,
    after: number,
    limit?: number,
  ): Promise<RunEventPage | undefined> {
    return (await this.#store()).readRunEvents(namespace, runId, after, limit);
  }

  async listRuns(namespace: string, sessionId: string, options?: RunListOptions): Promise<RunPage> {
    return (await this.#store()).listRuns(namespace, sessionId, options);
  }

  async cancelRun(namespace: string, runId: string): Promise<RunRecord | undefined> {
    return (await this.#store()).cancelRun(namespace, runId);
  }

  async deleteRun(namespace: string, runId: string): Promise<boolean> {
    return (await this.#store()).deleteRun(namespace, runId);
  }

  watchRun(namespace: string, runId: string, listener: () => void): () => void {
    let stop: (() => void) | undefined;
    let stopped = false;
    this.#store().then(
      (store) => {
        if (stopped) return;
        stop = store.watchRun(namespace, runId, listener);
        listener();
      },
      () => {
        // Not connected: readers poll.
      },
    );
    return () => {
      stopped = true;
      stop?.();
    };
  }
}
