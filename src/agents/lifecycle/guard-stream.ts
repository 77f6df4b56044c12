import type { Steps } from '../../core/steps';
import type { Turn } from './turn';

/*
 * Output guardrails of a streaming call: each chunk is checked as it passes (a check that trips at once stops
 * the stream; one answering later aborts the call's signal, which stops the model), and the call succeeds only
 * once every check has answered.
 */

/** The forward's stream, each chunk checked by the call's output guardrails. */
export function guardedStream(turn: Turn, stream: Iterator<unknown> | AsyncIterator<unknown>): unknown {
  return Symbol.asyncIterator in stream
    ? guardAsync(turn, stream as AsyncIterator<unknown>)
    : guardSync(turn, stream as Iterator<unknown>);
}

function* guardSync(turn: Turn, stream: Iterator<unknown>): Generator<unknown, unknown, undefined> {
  let done = false;
  try {
    while (true) {
      const step = stream.next();
      if (step.done) {
        done = true;
        return step.value;
      }
      turn.checkChunk(step.value);
      yield step.value;
    }
  } finally {
    if (!done) stream.return?.();
  }
}

async function* guardAsync(
  turn: Turn,
  stream: AsyncIterator<unknown>,
): AsyncGenerator<unknown, unknown, undefined> {
  let done = false;
  try {
    while (true) {
      const step = await stream.next();
      if (step.done) {
        done = true;
        return step.value;
      }
      turn.checkChunk(step.value);
      yield step.value;
    }
  } finally {
    if (!done) await stream.return?.();
  }
}

/** Waits for the checks still running alongside the call; throws what tripped. */
export function* settleChecks(turn: Turn): Steps<void> {
  if (turn.checks !== undefined) yield Promise.all(turn.checks);
  if (turn.tripped !== undefined) throw turn.tripped;
}
