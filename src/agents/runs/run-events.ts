import { AgentMessage, asOwnMessage } from '../../schema/agent-message';
import { AgentStatusCode } from '../../schema/status';
import type { RunEvent, RunStatus } from '../../stores/types';
import { errorMessage } from '../../utils/text';
import type { AgentEvents } from '../agent-base';

/*
 * What a run's log holds, event by event (each `{ type, data }`, data as JSON text, numbered by the store):
 *
 * - `chunk`: a streamed chunk whole, in Lagent's wire shape (`AgentMessage.model_dump()`); `delta`: a chunk whose
 *   `content` is only the text it adds to the chunk before it (its other fields are its own). The same events
 *   as `POST /chat_completion/stream` sends, and a chunk of reasoning also carries the `reasoning_delta` it adds.
 * - `agent`: an agent event of the run's agent tree: `{ kind, path, agent, detail }` (`path`: the emitting
 *   agent's dotted path, `''` for the root; `detail`: what the event carries, long texts cut; a `toolEnd`'s
 *   `errors[i]`, when a tool failed, is why call `i` failed).
 * - `status`: `{ status }` when the run starts running, and `{ status: 'running', recovered: true }` when a
 *   process takes over a run another left (its durable call is replayed: a reply streamed again is sent whole,
 *   as a `chunk`), or `resumed: true` when a waiting run goes on with a decision.
 * - `message`: the reply (the run is done, or waits for a decision when it is an interrupt); `error`:
 *   `{ detail, error, status }`, the run failed or was cancelled. Each is its log's last event until the run
 *   goes on.
 * - `truncated`: `{ maxEvents }`, once, when the run passed its log's size: later chunks and agent events are
 *   not kept (its status and its end still are).
 */

/** The types of a run log's events. */
export const RUN_EVENT_TYPES = {
  chunk: 'chunk',
  delta: 'delta',
  agent: 'agent',
  status: 'status',
  message: 'message',
  error: 'error',
  truncated: 'truncated',
} as const;

/**
 * An event as this process logs it: `data`, its JSON text, is what the store keeps; `value`, when set, is the
 * value that text is of, which readers in this process take from the run's feed instead of parsing `data` again
 * (a chunk's: the many events of a run). The value is shared by those readers: they read it, never change it. An
 * event read from the store has no `value`. `seq` is 0 until the event is written.
 */
export interface LiveRunEvent extends RunEvent {
  value: unknown;
}

/** A logged event (see {@link LiveRunEvent}); every event of a log has this one shape. */
export function liveEvent(type: string, data: string, value?: unknown): LiveRunEvent {
  return { seq: 0, type, data, value };
}

/** The data of a run's event: its value when this process logged it, else its JSON text parsed. */
export function eventData(event: RunEvent): unknown {
  const value = (event as Partial<LiveRunEvent>).value;
  return value === undefined ? JSON.parse(event.data) : value;
}

/** The agent events a run's log keeps. */
export const RUN_AGENT_EVENTS = [
  'callStart',
  'callEnd',
  'llmStart',
  'llmEnd',
  'error',
  'toolStart',
  'toolEnd',
  'interrupt',
  'resume',
  'stepReplayed',
  'callRecovered',
] as const satisfies readonly (keyof AgentEvents)[];

export type RunAgentEventKind = (typeof RUN_AGENT_EVENTS)[number];

/**
 * Turns a stream's chunks into log events: a chunk that extends the previous one's text is a `delta` (the
 * whole text of a reply is logged once), any other a whole `chunk`.
 */
export class ChunkEncoder {
  /** The text of the last chunk logged, when it was text. */
  #previous: string | undefined;

  encode(chunk: unknown): LiveRunEvent {
    const message = asOwnMessage(chunk);
    if (message === undefined) {
      this.#previous = undefined;
      return liveEvent(RUN_EVENT_TYPES.chunk, json(chunk));
    }
    const wire = message.toJSON({ format: 'lagent' });
    // Reasoning is not part of a message's JSON: a chunk of reasoning says what it adds here.
    const reasoning = message.reasoningDelta;
    if (typeof reasoning === 'string' && reasoning !== '')
      (wire as { reasoning_delta?: string }).reasoning_delta = reasoning;
    const content = message.content;
    const delta = this.#deltaOf(message);
    this.#previous = typeof content === 'string' ? content : undefined;
    // The wire form is the chunk's fresh copy, which its text is of: readers in this process take it as it is.
    if (delta === undefined) return liveEvent(RUN_EVENT_TYPES.chunk, JSON.stringify(wire), wire);
    (wire as { content: unknown }).content = delta;
    return liveEvent(RUN_EVENT_TYPES.delta, JSON.stringify(wire), wire);
  }

  /** Forgets the previous chunk: the next one is logged whole (a replayed reply, after a recovery). */
  reset(): void {
    this.#previous = undefined;
  }

  #deltaOf(chunk: AgentMessage): string | undefined {
    const content = chunk.content;
    const previous = this.#previous;
    if (typeof content !== 'string' || previous === undefined) return undefined;
    const given = chunk.delta;
    if (typeof given === 'string' && content.length === previous.length + given.length) return given;
    return content.startsWith(previous) ? content.slice(previous.length) : undefined;
  }
}

/** A chunk rather than a final message (a message with `streamState` STREAM_ING). */
export function isChunk(value: unknown): boolean {
  return asOwnMessage(value)?.streamState === AgentStatusCode.STREAM_ING;
}

/** The `message` event of a run's reply. */
export function messageEvent(reply: unknown): LiveRunEvent {
  return liveEvent(RUN_EVENT_TYPES.message, json(toWire(reply)));
}

/** The `error` event of a run that failed or was cancelled. */
export function errorEvent(status: RunStatus, detail: string, error: string): LiveRunEvent {
  return liveEvent(RUN_EVENT_TYPES.error, JSON.stringify({ detail, error, status }));
}

/** A `status` event. */
export function statusEvent(status: RunStatus, extra?: Record<string, unknown>): LiveRunEvent {
  return liveEvent(RUN_EVENT_TYPES.status, JSON.stringify({ status, ...extra }));
}

/** An `agent` event. */
export function agentEvent(kind: RunAgentEventKind, event: Record<string, unknown>): LiveRunEvent {
  const agent = event.agent as { name?: unknown } | undefined;
  // Its value is not kept: an event's detail may hold the emitter's own objects, which its text snapshots.
  return liveEvent(
    RUN_EVENT_TYPES.agent,
    json({
      kind,
      path: typeof event.path === 'string' ? event.path : '',
      agent: typeof agent?.name === 'string' ? agent.name : '',
      detail: detailOf(kind, event),
    }),
  );
}

/** A reply in its wire form (Lagent's shape). */
export function toWire(reply: unknown): unknown {
  const message = asOwnMessage(reply);
  if (message !== undefined) return message.toJSON({ format: 'lagent' });
  if (typeof reply === 'string') {
    return new AgentMessage({ sender: 'assistant', content: reply }).toJSON({ format: 'lagent' });
  }
  return reply;
}

/** JSON text of a value; what JSON cannot hold becomes its description. */
function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null';
  } catch (error) {
    return JSON.stringify({ unserializable: errorMessage(error) });
  }
}

/** Longest text an agent event carries. */
const MAX_TEXT = 4_000;
/** Most messages and tool calls an agent event shows. */
const MAX_ITEMS = 32;

function cut(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
}

interface ToolCallLike {
  id?: unknown;
  name?: unknown;
  arguments?: unknown;
}

function toolCalls(calls: unknown): unknown[] {
  if (!Array.isArray(calls)) return [];
  return (calls as ToolCallLike[])
    .slice(0, MAX_ITEMS)
    .map((call) => ({ id: call?.id, name: call?.name, arguments: cut(call?.arguments) }));
}

/** An `ActionReturn`'s result as text. */
function resultText(result: unknown): string {
  const r = result as { result?: unknown; errmsg?: unknown } | null;
  if (r === null || typeof r !== 'object') return cut(result);
  if (typeof r.errmsg === 'string' && r.errmsg !== '') return cut(`error: ${r.errmsg}`);
  if (Array.isArray(r.result)) {
    return cut(
      r.result
        .map((item: { content?: unknown }) => (typeof item?.content === 'string' ? item.content : cut(item)))
        .join('\n'),
    );
  }
  return cut(r.result);
}

/** Why a tool call failed (its `ActionReturn`'s `errmsg`), or null. */
function errorOf(result: unknown): string | null {
  const errmsg = (result as { errmsg?: unknown } | null)?.errmsg;
  return typeof errmsg === 'string' && errmsg !== '' ? cut(errmsg) : null;
}

/** What an agent event carries, as JSON-ready data. */
function detailOf(kind: RunAgentEventKind, event: Record<string, unknown>): unknown {
  switch (kind) {
    case 'callStart': {
      const messages = (event.messages as { content?: unknown; type?: unknown }[] | undefined) ?? [];
      return {
        messages: messages.slice(-MAX_ITEMS).map((m) => ({ type: m.type ?? null, content: cut(m.content) })),
      };
    }
    case 'callEnd': {
      const message = event.message as { content?: unknown; type?: unknown } | undefined;
      return { type: message?.type ?? null, content: cut(message?.content) };
    }
    case 'llmStart':
      return { messages: (event.messages as unknown[] | undefined)?.length ?? 0 };
    case 'llmEnd':
      return event.reasoning === undefined
        ? { response: cut(event.response) }
        : { response: cut(event.response), reasoning: cut(event.reasoning) };
    case 'error':
      return { error: cut(errorMessage(event.error)) };
    case 'toolStart':
      return { toolCalls: toolCalls(event.toolCalls) };
    case 'toolEnd': {
      const content = (event.message as { content?: unknown } | undefined)?.content;
      const returns = Array.isArray(content) ? content.slice(0, MAX_ITEMS) : [content];
      const detail: Record<string, unknown> = {
        toolCalls: toolCalls(event.toolCalls),
        results: Array.isArray(content) ? returns.map(resultText) : [cut(content)],
      };
      const errors = returns.map(errorOf);
      if (errors.some((error) => error !== null)) detail.errors = errors;
      return detail;
    }
    case 'interrupt':
      return { interrupts: event.interrupts };
    case 'resume':
      return { decisions: event.decisions };
    case 'stepReplayed':
      return { callId: event.callId, step: event.step };
    case 'callRecovered':
      return { callId: event.callId };
  }
}
