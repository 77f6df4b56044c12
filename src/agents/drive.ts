import { AgentMessage } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import { AgentStatusCode } from '../schema/status';
import { isThenable } from '../utils/is';

/**
 * The agent lifecycle and `Sequential`'s steps are written once, as generators that `yield` only when a
 * step produced something that needs driving: a promise (to await) or a stream (to relay). The four
 * drivers below decide what that means for each variant.
 */
export type Steps<T> = Generator<unknown, T, unknown>;

function noPromiseHere(value: PromiseLike<unknown>): ConfigurationError {
  // The promise is abandoned; keep its rejection from surfacing as unhandled.
  Promise.resolve(value).catch(() => {});
  return new ConfigurationError({
    message:
      'got a Promise inside a synchronous agent (an async hook, forward or sub-agent?); use the Async variant',
  });
}

function noStreamHere(): ConfigurationError {
  return new ConfigurationError({
    message:
      'got a stream inside a non-streaming agent (a streaming forward or sub-agent?); use a Streaming variant',
  });
}

function isAsyncIterator(value: unknown): value is AsyncIterator<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

/** Runs steps synchronously; anything that needs driving is a configuration error. */
export function driveSync<T>(steps: Steps<T>): T {
  let step = steps.next();
  while (!step.done) {
    const value = step.value;
    step = steps.throw(isThenable(value) ? noPromiseHere(value) : noStreamHere());
  }
  return step.value;
}

/** Runs steps, awaiting promises. */
export async function driveAsync<T>(steps: Steps<T>): Promise<T> {
  let step = steps.next();
  while (!step.done) {
    const value = step.value;
    if (!isThenable(value)) {
      step = steps.throw(noStreamHere());
      continue;
    }
    let resolved: unknown;
    try {
      resolved = await value;
    } catch (error) {
      step = steps.throw(error);
      continue;
    }
    step = steps.next(resolved);
  }
  return step.value;
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
        step = steps.throw(noPromiseHere(value));
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
