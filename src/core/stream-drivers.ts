import { AgentMessage } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import { AgentStatusCode } from '../schema/status';
import { isAsyncIterator, isThenable } from '../utils/is';
import { promiseNotAllowed, type Steps } from './steps';

/*
 * The streaming drivers: like `driveSync` / `driveAsync` in core/steps, but a stream that the steps
 * yield is relayed to the consumer chunk by chunk, and its final message is sent back into the steps.
 */

/**
 * Final replies of agent calls, as their streaming drivers yield them. When a streaming sub-agent's call is
 * relayed, its final reply is the stream's result, not one more chunk.
 */
const finalReplies = new WeakSet<AgentMessage>();

/** Tracks one relayed stream: the previous chunk's text, to give each chunk its `delta`. */
interface RelayState {
  readonly sender: string;
  /** The latest chunk of the stream being relayed, and its text. */
  last: AgentMessage | undefined;
  text: string;
}

/**
 * The text a chunk adds to the previous one: the new tail when it extends it, else all of it. Finding out
 * reads the previous text whole, so a chunk whose source knows its delta carries it (the built-in forwards set
 * the model's own, see `buildChunk`) and is never compared: a stream of such chunks is relayed in time linear
 * in its length. Only chunks without one (a custom forward's strings) are compared here.
 */
function deltaOf(content: unknown, previous: string): string {
  if (typeof content !== 'string') return '';
  return content.startsWith(previous) ? content.slice(previous.length) : content;
}

/**
 * A streamed value as a chunk: strings become messages from the stream's sender; finished messages (`END`)
 * are marked `STREAM_ING` on a copy (a stream's own messages are never changed), other chunk states
 * (Lagent's `PLUGIN_START`, `CODING`, ...) pass as they are; every chunk gets its `delta`.
 */
function toChunk(value: unknown, state: RelayState): AgentMessage {
  let chunk: AgentMessage;
  if (typeof value === 'string') {
    chunk = new AgentMessage({
      sender: state.sender,
      content: value,
      streamState: AgentStatusCode.STREAM_ING,
    });
  } else if (value instanceof AgentMessage) {
    // A chunk state other than END (STREAM_ING, or Lagent's PLUGIN_START, CODING, ...) is kept as it is:
    // only a finished message (END) is turned into a chunk, on a copy.
    chunk =
      value.streamState !== AgentStatusCode.END
        ? value
        : new AgentMessage({
            content: value.content,
            sender: value.sender,
            formatted: value.formatted,
            extraInfo: value.extraInfo,
            type: value.type,
            receiver: value.receiver,
            streamState: AgentStatusCode.STREAM_ING,
          });
  } else {
    throw new ConfigurationError({
      message: `a streaming forward must yield strings or AgentMessages, got ${typeof value}`,
    });
  }
  chunk.delta ??= deltaOf(chunk.content, state.text);
  if (typeof chunk.content === 'string') state.text = chunk.content;
  state.last = chunk;
  return chunk;
}

/** The stream's result: its return value, else its last chunk (copied, since the consumer holds that one). */
function finalOf(returned: unknown, last: AgentMessage | undefined): unknown {
  const final = returned ?? last;
  if (final === undefined)
    throw new ConfigurationError({ message: 'a streaming forward finished without a message' });
  return final === last ? last.clone() : final;
}

function* relay(stream: Iterator<unknown>, state: RelayState): Generator<AgentMessage, unknown, undefined> {
  state.last = undefined;
  state.text = '';
  let result = stream.next();
  try {
    while (!result.done) {
      const value = result.value;
      if (value instanceof AgentMessage && finalReplies.has(value)) return value;
      yield toChunk(value, state);
      result = stream.next();
    }
  } finally {
    if (!result.done) stream.return?.();
  }
  return finalOf(result.value, state.last);
}

async function* relayAsync(
  stream: Iterator<unknown> | AsyncIterator<unknown>,
  state: RelayState,
): AsyncGenerator<AgentMessage, unknown, undefined> {
  state.last = undefined;
  state.text = '';
  let result = await stream.next();
  try {
    while (!result.done) {
      const value = result.value;
      if (value instanceof AgentMessage && finalReplies.has(value)) return value;
      yield toChunk(value, state);
      result = await stream.next();
    }
  } finally {
    if (!result.done) await stream.return?.();
  }
  return finalOf(result.value, state.last);
}

/**
 * Runs a stream that steps yielded to its end without relaying it (a durable call recovered before the one
 * being streamed): its final message, as a relay sends it back into the steps; a promise for an async stream.
 */
export function drainStream(stream: Iterator<unknown> | AsyncIterator<unknown>): unknown {
  const state: RelayState = { sender: '', last: undefined, text: '' };
  if (isAsyncIterator(stream)) {
    const relaying = relayAsync(stream, state);
    return (async () => {
      let result = await relaying.next();
      while (!result.done) result = await relaying.next();
      return result.value;
    })();
  }
  const relaying = relay(stream as Iterator<unknown>, state);
  let result = relaying.next();
  while (!result.done) result = relaying.next();
  return result.value;
}

/** Marks and yields an agent call's final reply; its `delta` is what it adds to the last chunk. */
function finalReply(value: unknown, lastText: string): AgentMessage {
  const message = value as AgentMessage;
  message.delta = deltaOf(message.content, lastText);
  finalReplies.add(message);
  return message;
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
  const state: RelayState = { sender, last: undefined, text: '' };
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
        final = yield* relay(value as Iterator<unknown>, state);
      } catch (error) {
        step = steps.throw(error);
        continue;
      }
      step = steps.next(final);
    }
  } finally {
    if (!step.done) steps.return(undefined as T);
  }
  if (emitFinal) yield finalReply(step.value, state.text);
  return step.value;
}

/** The async twin of {@link driveStream}: awaits promises and relays sync or async streams. */
export async function* driveStreamAsync<T>(
  steps: Steps<T>,
  sender: string,
  emitFinal: boolean,
): AsyncGenerator<AgentMessage, T, undefined> {
  const state: RelayState = { sender, last: undefined, text: '' };
  let step = steps.next();
  try {
    while (!step.done) {
      const value = step.value;
      let resolved: unknown;
      try {
        resolved = isThenable(value) ? await value : yield* relayAsync(value as Iterator<unknown>, state);
      } catch (error) {
        step = steps.throw(error);
        continue;
      }
      step = steps.next(resolved);
    }
  } finally {
    if (!step.done) steps.return(undefined as T);
  }
  if (emitFinal) yield finalReply(step.value, state.text);
  return step.value;
}
