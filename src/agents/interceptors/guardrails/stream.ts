import type { Steps } from '../../../core/steps';
import { AgentMessage } from '../../../schema/agent-message';
import { ConfigurationError } from '../../../schema/errors';
import type { GuardState } from './index';

/*
 * Guardrails of a streaming call. Each chunk is checked as it comes and delivered only once every output
 * check of it passed, and no chunk is delivered before the call's parallel input checks passed: a trip means
 * the chunk it tripped on and everything after it never reach the caller (a trip aborts the call's signal,
 * which stops the model). While the first chunk held back waits, the stream is read ahead and the checks of
 * the chunks read run alongside, so a check that answers later delays the stream by about its own time, not
 * by that time for every chunk. The call succeeds only once every check has answered.
 */

/**
 * Chunks read ahead of the first one held back, at most. A chunk whose `formatted` is an object is never
 * read past while it is held: streamed structure is one live object, which reading on would fill with text
 * nobody checked yet.
 */
export const READ_AHEAD = 64;

/** The forward's stream, each chunk checked by the call's output guardrails. */
export function guardedStream(turn: GuardState, stream: Iterator<unknown> | AsyncIterator<unknown>): unknown {
  return Symbol.asyncIterator in stream
    ? guardAsync(turn, stream as AsyncIterator<unknown>)
    : guardSync(turn, stream as Iterator<unknown>);
}

/** A synchronous stream cannot wait: its checks must answer at once. */
function* guardSync(turn: GuardState, stream: Iterator<unknown>): Generator<unknown, unknown, undefined> {
  let done = false;
  try {
    while (true) {
      const step = stream.next();
      if (step.done) {
        done = true;
        return step.value;
      }
      const pending = turn.checkChunk(step.value);
      if (pending !== undefined || turn.inputsPending) {
        pending?.catch(() => {});
        throw new ConfigurationError({
          message: `${turn.turn.agent.name}: a guardrail's check returned a promise, which a synchronous stream cannot wait for before it delivers a chunk; use an async generator as forward (AsyncStreamingAgent) or checks that answer at once`,
        });
      }
      yield step.value;
    }
  } finally {
    if (!done) stream.return?.();
  }
}

/** A chunk read from the stream, waiting for its checks. */
interface Held {
  readonly value: unknown;
  /** Its checks still running, if any (cleared once they passed). */
  pending: Promise<void> | undefined;
}

function hold(turn: GuardState, value: unknown): Held {
  const held: Held = { value, pending: turn.checkChunk(value) };
  held.pending?.then(() => {
    held.pending = undefined;
  }, noop);
  return held;
}

/** True when the stream may be read past this chunk while it is held (see {@link READ_AHEAD}). */
function readsPast(held: Held): boolean {
  const value = held.value;
  if (!(value instanceof AgentMessage)) return true;
  const formatted = value.formatted;
  return formatted === null || typeof formatted !== 'object';
}

async function* guardAsync(
  turn: GuardState,
  stream: AsyncIterator<unknown>,
): AsyncGenerator<unknown, unknown, undefined> {
  const queue: Held[] = [];
  let pull: Promise<IteratorResult<unknown>> | undefined;
  let ended = false;
  let result: unknown;
  try {
    for (;;) {
      if (queue.length === 0) {
        if (ended) return result;
        pull ??= stream.next();
        const step = await turn.untilStopped(pull);
        pull = undefined;
        if (step.done) {
          ended = true;
          result = step.value;
        } else queue.push(hold(turn, step.value));
        continue;
      }
      const head = queue[0]!;
      const waiting = turn.inputsPending ? turn.inputGate! : head.pending;
      if (waiting === undefined) {
        queue.shift();
        if (turn.tripped !== undefined) throw turn.tripped;
        yield head.value;
        continue;
      }
      // A check ends when the call is stopped (it listens to the call's signal): no other wait is needed.
      if (ended || queue.length >= READ_AHEAD || !readsPast(queue[queue.length - 1]!)) {
        await waiting;
        continue;
      }
      // Read on while the head waits: whichever comes first, the head's checks or the next chunk.
      pull ??= stream.next();
      const first = await Promise.race([waiting, pull]);
      if (first === undefined) continue;
      pull = undefined;
      if (first.done) {
        ended = true;
        result = first.value;
      } else queue.push(hold(turn, first.value));
    }
  } finally {
    if (!ended) {
      if (pull === undefined) await stream.return?.();
      else {
        // A read still under way: the stream ends once it settles (the trip aborted the model); nobody waits.
        pull.catch(noop);
        try {
          Promise.resolve(stream.return?.()).catch(noop);
        } catch {
          // a stream whose return throws has nothing left to release
        }
      }
    }
  }
}

function noop(): void {}

/** Waits for the checks still running alongside the call; throws what tripped. */
export function* settleChecks(turn: GuardState): Steps<void> {
  if (turn.checks !== undefined) yield Promise.all(turn.checks);
  if (turn.tripped !== undefined) throw turn.tripped;
}
