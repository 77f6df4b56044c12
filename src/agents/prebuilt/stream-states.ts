import type { AgentMessage } from '../../schema/agent-message';
import { AgentStatusCode } from '../../schema/status';
import { asToolResponse } from '../../schema/tool-response';

/*
 * Lagent's stream states on the chunks of the streaming InternLM agents. The core relays chunks as
 * `STREAM_ING`; the agent marks the ones it emits itself (a finished tool call, a tool result) here, and
 * its `call` stamps each chunk's state on the way out.
 */

const marks = new WeakMap<AgentMessage, AgentStatusCode>();

/** The states of one tool type: while the call is written, when it is complete, when its result is back. */
interface ToolStates {
  start: AgentStatusCode;
  end: AgentStatusCode;
  result: AgentStatusCode;
}

const TOOL_STATES: Readonly<Record<string, ToolStates>> = Object.freeze({
  plugin: {
    start: AgentStatusCode.PLUGIN_START,
    end: AgentStatusCode.PLUGIN_END,
    result: AgentStatusCode.PLUGIN_RETURN,
  },
  interpreter: {
    start: AgentStatusCode.CODING,
    end: AgentStatusCode.CODE_END,
    result: AgentStatusCode.CODE_RETURN,
  },
});

/** The state of a tool type's phase; `STREAM_ING` for tool types Lagent has no states for. */
export function toolState(toolType: string | null, phase: keyof ToolStates): AgentStatusCode {
  return (toolType !== null && TOOL_STATES[toolType]?.[phase]) || AgentStatusCode.STREAM_ING;
}

/**
 * A stream of one chunk (a copy of `message`) that will carry `state`; `delta` is what it adds for a
 * consumer that prints deltas.
 */
export function* markedChunk(
  message: AgentMessage,
  state: AgentStatusCode,
  delta: string,
): Generator<AgentMessage, AgentMessage, undefined> {
  const chunk = message.clone();
  chunk.streamState = AgentStatusCode.STREAM_ING;
  chunk.delta = delta;
  marks.set(chunk, state);
  yield chunk;
  return chunk;
}

/** A chunk's state: its mark, else, for the model's own chunks, whether a tool call is being written. */
export function stampState(chunk: AgentMessage, modelSender: string): AgentMessage {
  const marked = marks.get(chunk);
  if (marked !== undefined) chunk.streamState = marked;
  else if (chunk.streamState === AgentStatusCode.STREAM_ING && chunk.sender === modelSender) {
    chunk.streamState = toolState(asToolResponse(chunk.formatted)?.toolType ?? null, 'start');
  }
  return chunk;
}

/** `stream` with every chunk's state stamped; leaving early closes it. */
export function* withStreamStates<T, R>(
  stream: Generator<T, R, undefined>,
  modelSender: () => string,
): Generator<T, R, undefined> {
  let step = stream.next();
  try {
    while (!step.done) {
      yield stampState(step.value as AgentMessage, modelSender()) as T;
      step = stream.next();
    }
  } finally {
    if (!step.done) stream.return(undefined as R);
  }
  return step.value;
}

/** The async twin of {@link withStreamStates}. */
export async function* withStreamStatesAsync<T, R>(
  stream: AsyncGenerator<T, R, undefined>,
  modelSender: () => string,
): AsyncGenerator<T, R, undefined> {
  let step = await stream.next();
  try {
    while (!step.done) {
      yield stampState(step.value as AgentMessage, modelSender()) as T;
      step = await stream.next();
    }
  } finally {
    if (!step.done) await stream.return(undefined as R);
  }
  return step.value;
}
