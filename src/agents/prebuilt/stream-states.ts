import { AgentMessage } from '../../schema/agent-message';
import { AgentStatusCode } from '../../schema/status';
import { asToolResponse } from '../../schema/tool-response';
import { isIterator } from '../../utils/is';

/*
 * Lagent's stream states on the chunks of the streaming InternLM agents. The core relays a chunk's own
 * state (only finished messages become `STREAM_ING`), so the loop sets them where it makes the chunks: on
 * the model's stream (writing a tool call) and on the chunks it emits itself (the finished call, its result).
 */

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
 * A stream of one chunk, a copy of `message` in `state`; `delta` is what it adds for a consumer that prints
 * deltas.
 */
export function* markedChunk(
  message: AgentMessage,
  state: AgentStatusCode,
  delta: string,
): Generator<AgentMessage, AgentMessage, undefined> {
  const chunk = message.clone();
  chunk.streamState = state;
  chunk.delta = delta;
  yield chunk;
  return chunk;
}

/** A model chunk in the state of what it is writing: `PLUGIN_START` / `CODING` inside a tool call. */
function withToolState(value: unknown): unknown {
  if (value instanceof AgentMessage && value.streamState === AgentStatusCode.STREAM_ING) {
    value.streamState = toolState(asToolResponse(value.formatted)?.toolType ?? null, 'start');
  }
  return value;
}

function* toolStatesSync<R>(stream: Iterator<unknown, R>): Generator<unknown, R, undefined> {
  let step = stream.next();
  try {
    while (!step.done) {
      yield withToolState(step.value);
      step = stream.next();
    }
  } finally {
    if (!step.done) stream.return?.();
  }
  return step.value;
}

async function* toolStatesAsync<R>(stream: AsyncIterator<unknown, R>): AsyncGenerator<unknown, R, undefined> {
  let step = await stream.next();
  try {
    while (!step.done) {
      yield withToolState(step.value);
      step = await stream.next();
    }
  } finally {
    if (!step.done) await stream.return?.();
  }
  return step.value;
}

/**
 * The model's stream (a sync or async stream of chunks, from the sub-agent's call) with each chunk in the
 * state of what it is writing; anything else (a promise, a message) passes as it is.
 */
export function withToolStates(call: unknown): unknown {
  if (!isIterator(call) || call instanceof AgentMessage) return call;
  return Symbol.asyncIterator in call
    ? toolStatesAsync(call as AsyncIterator<unknown>)
    : toolStatesSync(call as Iterator<unknown>);
}
