import { AgentMessage } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import { AgentStatusCode } from '../schema/status';
import { isThenable } from '../utils/is';
import { promiseNotAllowed, type Steps } from './steps';

/*
 * The streaming drivers: like `driveSync` / `driveAsync` in utils/steps, but a stream that the steps
 * yield is relayed to the consumer chunk by chunk, and its final message is sent back into the steps.
 */

function isAsyncIterator(value: unknown): value is AsyncIterator<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

/** A streamed value as a chunk: strings become messages from `sender`; every chunk is marked `STREAM_ING`. */
function toChunk(value: unknown, sender: string): AgentMessage {
  if (typeof value === 'string')
    return new AgentMessage({ sender, content: value, streamState: AgentStatusCode.STREAM_ING });
  if (value instanceof AgentMessage) {
    value.streamState = AgentStatusCode.STREAM_ING;
    return value;
  }
  throw new ConfigurationError({
    message: `a streaming forward must yield strings or AgentMessages, got ${typeof value}`,
  });
}

/** The stream's result: its return value, else its last chunk (copied, since the consumer holds that one). */
function finalOf(returned: unknown, last: AgentMessage | undefined): unknown {
  const final = returned ?? last;
  if (final === undefined)
    throw new ConfigurationError({ message: 'a streaming forward finished without a message' });
  return final === last ? last.clone() : final;
}

function* relay(stream: Iterator<unknown>, sender: string): Generator<AgentMessage, unknown, undefined> {
  let last: AgentMessage | undefined;
  let result = stream.next();
  try {
    while (!result.done) {
      last = toChunk(result.value, sender);
      yield last;
      result = stream.next();
    }
  } finally {
    if (!result.done) stream.return?.();
  }
  return finalOf(result.value, last);
}

async function* relayAsync(
  stream: Iterator<unknown> | AsyncIterator<unknown>,
  sender: string,
): AsyncGenerator<AgentMessage, unknown, undefined> {
  let last: AgentMessage | undefined;
  let result = await stream.next();
  try {
    while (!result.done) {
      last = toChunk(result.value, sender);
      yield last;
      result = await stream.next();
    }
  } finally {
    if (!result.done) await stream.return?.();
  }
  return finalOf(result.value, last);
}

/**
 * Runs steps synchronously, relaying every stream they produce as `STREAM_ING` chunks. With `emitFinal`
 * the result is yielded once more at the end (what `StreamingAgent.call` does). Leaving early rolls the
 * steps back through their `finally` blocks.
 */
export function* driveStream<T>(
  steps: Steps<T>,
  sender: string,
  emitFinal: boolean,
): Generator<AgentMessage, T, undefined> {
  let step = steps.next();
  try {
    while (!step.done) {
      const value = step.value;
      if (isThenable(value)) {
        step = steps.throw(promiseNotAllowed(value));
        continue;
      }
      if (isAsyncIterator(value)) {
        step = steps.throw(
          new ConfigurationError({
            message: 'got an async stream inside a synchronous agent; use AsyncStreamingAgent',
          }),
        );
        continue;
      }
      let final: unknown;
      try {
        final = yield* relay(value as Iterator<unknown>, sender);
      } catch (error) {
        step = steps.throw(error);
        continue;
      }
      step = steps.next(final);
    }
  } finally {
    if (!step.done) steps.return(undefined as T);
  }
  if (emitFinal) yield step.value as AgentMessage;
  return step.value;
}

/** The async twin of {@link driveStream}: awaits promises and relays sync or async streams. */
export async function* driveStreamAsync<T>(
  steps: Steps<T>,
  sender: string,
  emitFinal: boolean,
): AsyncGenerator<AgentMessage, T, undefined> {
  let step = steps.next();
  try {
    while (!step.done) {
      const value = step.value;
      let resolved: unknown;
      try {
        resolved = isThenable(value) ? await value : yield* relayAsync(value as Iterator<unknown>, sender);
      } catch (error) {
        step = steps.throw(error);
        continue;
      }
      step = steps.next(resolved);
    }
  } finally {
    if (!step.done) steps.return(undefined as T);
  }
  if (emitFinal) yield step.value as AgentMessage;
  return step.value;
}
