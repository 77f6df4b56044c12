import { ConfigurationError, ValidationError } from '../../schema/errors';
import type { RunStatus, SessionStore } from '../../stores/types';
import { CallNotRecovered, DURABLE, RECOVERING } from '../interceptors/durable/journal';
import { executeRun, type RunPlace } from './run';
import { runRests } from './run-reader';

/** What start-up recovery did with one call a process left unfinished. */
export interface RecoveredRun {
  /** The run's id: its call's id. */
  runId: string;
  sessionId: string;
  /**
   * How its run ended: `done`, `waiting` (it asked for a decision again), `failed` (with `error`), or
   * `skipped`: it needed no recovery after all (it waits for a decision, or another process finished it).
   */
  status: RunStatus | 'skipped';
  error?: unknown;
}

/** Options of {@link recoverRuns}. */
export interface RecoverRunsOptions {
  /** Sessions recovered at once (each session's calls one after another, oldest first). @default 4 */
  concurrency?: number | undefined;
  /** Told of each call as its recovery ends. */
  onRecovered?: ((run: RecoveredRun) => void) | undefined;
}

/** How many sessions are recovered at once by default. */
export const DEFAULT_RECOVERY_CONCURRENCY = 4;

/**
 * Finishes, as runs, the durable calls of the agent's journal namespace that a process left unfinished (it
 * died): what a server does when it starts. Each call is replayed under its session's lease (a call another
 * live process still holds is waited for) and logged to its run's log (the run of id = its call id, made when
 * there is none), so a client that rejoins the run sees the rest. A call whose recovery fails ends its run
 * `failed` with the reason; the others go on. Nothing for an agent without `durable`.
 */
export async function recoverRuns(
  agent: object,
  place: RunPlace,
  options: RecoverRunsOptions = {},
): Promise<RecoveredRun[]> {
  const durable = (agent as { [DURABLE]?: { store: SessionStore; namespace?: string } })[DURABLE];
  if (durable === undefined) return [];
  const concurrency = options.concurrency ?? DEFAULT_RECOVERY_CONCURRENCY;
  if (!(Number.isSafeInteger(concurrency) && concurrency > 0)) {
    throw new ConfigurationError({
      message: `recovery concurrency must be a positive integer, got ${String(concurrency)}`,
    });
  }
  const { store } = durable;
  const namespace = durable.namespace ?? (agent as { name: string }).name;
  if (typeof store.listUnfinishedCalls !== 'function') {
    throw new ConfigurationError({
      message: `${store.description} cannot list a namespace's unfinished calls, so they cannot be recovered at start`,
    });
  }
  const sessions = new Set<string>();
  let after: string | undefined;
  do {
    const page = await store.listUnfinishedCalls(namespace, { after, limit: 500 });
    for (const call of page.calls) sessions.add(call.sessionId);
    after = page.next;
  } while (after !== undefined);
  const results: RecoveredRun[] = [];
  const queue = [...sessions];
  const recoverSession = async (sessionId: string) => {
    const callIds = await store.listJournals(namespace, sessionId, { unfinished: true });
    for (const callId of callIds) {
      const recovered = await recoverCall(agent, place, sessionId, callId);
      results.push(recovered);
      options.onRecovered?.(recovered);
    }
  };
  const worker = async () => {
    for (let sessionId = queue.shift(); sessionId !== undefined; sessionId = queue.shift()) {
      try {
        await recoverSession(sessionId);
      } catch (error) {
        const failed: RecoveredRun = { runId: '', sessionId, status: 'failed', error };
        results.push(failed);
        options.onRecovered?.(failed);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker));
  return results;
}

async function recoverCall(
  agent: object,
  place: RunPlace,
  sessionId: string,
  callId: string,
): Promise<RecoveredRun> {
  // A run that rests (it waits for a decision, or ended) needs nothing.
  const existing = await place.store.readRun(place.namespace, callId);
  if (existing !== undefined && runRests(existing.status))
    return { runId: callId, sessionId, status: 'skipped' };
  const run = executeRun({
    agent: agent as { call(input: unknown, options: Record<string, unknown>): unknown },
    input: undefined,
    callOptions: { sessionId, callId, [RECOVERING]: true },
    runId: callId,
    sessionId,
    place,
    mode: 'recover',
  });
  try {
    await run.result;
  } catch (error) {
    if (error instanceof CallNotRecovered) return { runId: callId, sessionId, status: 'skipped' };
    const record = await Promise.resolve(place.store.readRun(place.namespace, callId)).catch(() => undefined);
    // Another process recovered it between the look above and this run's start (its run was made and ended
    // meanwhile, so this one was refused before it ran anything): nothing was left to recover.
    if (
      error instanceof ValidationError &&
      error.field === 'runId' &&
      record !== undefined &&
      runRests(record.status)
    )
      return { runId: callId, sessionId, status: 'skipped' };
    return { runId: callId, sessionId, status: record?.status ?? 'failed', error };
  }
  const record = await place.store.readRun(place.namespace, callId);
  return { runId: callId, sessionId, status: record?.status ?? 'done' };
}
