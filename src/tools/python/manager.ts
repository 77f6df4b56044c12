import { locateBridge } from '../../bridge/location';
import { SyncBridge } from '../../bridge/sync-bridge';
import { ActionReturn, type ActionReturnInit } from '../../schema/action-return';
import { ConfigurationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { AsyncIPythonInteractive, type IPythonInteractiveOptions } from './interpreters';

/** Options of the interactive managers: the shell's options, and how many runs go at once. */
export interface IPythonInteractiveManagerOptions extends IPythonInteractiveOptions {
  /** Runs in flight at once across sessions (each session still runs one at a time). @default 50 */
  maxWorkers?: number | undefined;
}

function batch(
  commands: string | string[],
  sessionIds: SessionId | SessionId[] | undefined,
): [string, SessionId][] {
  const list = typeof commands === 'string' ? [commands] : commands;
  const ids =
    sessionIds === undefined
      ? list.map((_, index) => index)
      : Array.isArray(sessionIds)
        ? sessionIds
        : [sessionIds];
  if (ids.length !== list.length) {
    throw new ConfigurationError({
      message: `${list.length} commands but ${ids.length} session ids: give one session id per command`,
    });
  }
  return list.map((command, index) => [command, ids[index]!]);
}

/**
 * Lagent's manager of many interactive sessions, for batch work such as evaluation or RL rollouts: one call
 * runs a list of commands, each in its own session (`sessionIds[i]`, default `i`), at most `maxWorkers` at a
 * time, and answers with one `ActionReturn` per command, in order. Sessions keep their state between
 * batches, exactly as {@link AsyncIPythonInteractive}'s do (it runs them).
 *
 * @example
 * const manager = new AsyncIPythonInteractiveManager({ maxWorkers: 8 });
 * const results = await manager.run(['x = 1', 'x = 2'], ['a', 'b']);
 * const again = await manager.run(['x', 'x'], ['a', 'b']); // '1\n', '2\n'
 * manager.close();
 */
export class AsyncIPythonInteractiveManager {
  readonly shell: AsyncIPythonInteractive;
  readonly maxWorkers: number;

  constructor(options: IPythonInteractiveManagerOptions = {}) {
    const { maxWorkers = 50, ...shell } = options;
    if (!Number.isInteger(maxWorkers) || maxWorkers < 1) {
      throw new ConfigurationError({ message: `maxWorkers must be a positive integer, got ${maxWorkers}` });
    }
    this.maxWorkers = maxWorkers;
    this.shell = new AsyncIPythonInteractive(shell);
  }

  /** Runs one command (one result) or a list (a list of results, in order). */
  run(command: string, sessionId?: SessionId): Promise<ActionReturn>;
  run(commands: string[], sessionIds?: SessionId[]): Promise<ActionReturn[]>;
  async run(
    commands: string | string[],
    sessionIds?: SessionId | SessionId[],
  ): Promise<ActionReturn | ActionReturn[]> {
    const jobs = batch(commands, sessionIds);
    const results: ActionReturn[] = new Array(jobs.length);
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const index = next++;
        const [command, sessionId] = jobs[index]!;
        results[index] = await this.shell.call({ command }, 'run', { sessionId });
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.maxWorkers, jobs.length) }, worker));
    return typeof commands === 'string' ? results[0]! : results;
  }

  /** Ends the given sessions, or all of them; they start afresh on their next command. */
  reset(sessionIds?: SessionId[]): void {
    if (sessionIds === undefined) this.shell.reset();
    else for (const id of sessionIds) this.shell.reset(id);
  }

  /** Ends every process. */
  close(): void {
    this.shell.close();
  }
}

/**
 * The sync twin of {@link AsyncIPythonInteractiveManager}: a batch still runs concurrently (in the sync
 * bridge's worker), and this thread blocks until the whole batch is done.
 */
export class IPythonInteractiveManager {
  readonly #bridge: SyncBridge;

  constructor(options: IPythonInteractiveManagerOptions = {}) {
    this.#bridge = new SyncBridge(
      { exportName: 'AsyncIPythonInteractiveManager', args: [{ ...options }], module: locateBridge().tools },
      // A batch queues several runs per worker, each bounded by its own timeout: no deadline for the whole.
      { timeout: Number.POSITIVE_INFINITY },
    );
  }

  /** Runs one command (one result) or a list (a list of results, in order), blocking until all are done. */
  run(command: string, sessionId?: SessionId): ActionReturn;
  run(commands: string[], sessionIds?: SessionId[]): ActionReturn[];
  run(commands: string | string[], sessionIds?: SessionId | SessionId[]): ActionReturn | ActionReturn[] {
    batch(commands, sessionIds); // checked here, before anything crosses
    const answer = this.#bridge.call<ActionReturnInit | ActionReturnInit[]>('run', [commands, sessionIds]);
    return Array.isArray(answer) ? answer.map((init) => new ActionReturn(init)) : new ActionReturn(answer);
  }

  /** Ends the given sessions, or all of them. */
  reset(sessionIds?: SessionId[]): void {
    this.#bridge.call('reset', [sessionIds]);
  }

  /** Ends every process and releases the bridged manager. */
  close(): void {
    try {
      this.#bridge.call('close');
    } finally {
      this.#bridge.close();
    }
  }
}
