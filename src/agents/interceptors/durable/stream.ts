import type { DurableScope } from '../../../core/call-context';
import { type CallJournal, digestOf, nextKey, replayed } from './steps';

/**
 * A streamed model request as a durable step: its recorded answer when the journal has one (the stream is not
 * opened again), else `record`, to call with the answer once the stream has ended (a value for sync stores,
 * a promise for async ones).
 */
export interface StreamStep {
  readonly recorded: { content: string; toolCalls?: unknown } | undefined;
  record(answer: { content: string; toolCalls?: unknown }): unknown;
}

/** Takes the next step of `scope` for a streamed model request of `name` with `input`. */
export function streamStep(scope: DurableScope, name: string, input: unknown): StreamStep {
  const key = nextKey(scope);
  const digest = digestOf(input);
  const journal = scope.journal as CallJournal;
  const entry = journal.recorded(key, 'model', name, digest);
  if (entry !== undefined) replayed(scope, entry);
  return {
    recorded: entry?.result as StreamStep['recorded'],
    record: (answer) =>
      journal.write({ key, kind: 'model', name, digest, result: answer, spent: journal.spent() }),
  };
}
