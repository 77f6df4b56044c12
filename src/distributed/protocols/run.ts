import { AsyncLocalStorage } from 'node:async_hooks';
import { AgentBase } from '../../agents/agent-base';
import { TOOL_TURNS } from '../../agents/pending-interrupts';
import type { LagentStateDict } from '../../agents/state-dict';
import { AgentMessage, asOwnMessage, type MessageInput } from '../../schema/agent-message';
import type { ToolCall } from '../../schema/chat-message';
import type { SessionId } from '../../schema/session';
import { AgentStatusCode } from '../../schema/status';
import { isAsyncIterator, isIterator, isThenable } from '../../utils/is';
import type { CallerOptions } from '../caller-options';
import type { ServerRuns } from '../http/runs-routes';
import type { ServedAgent } from '../http/server';

/*
 * One agent call made for a protocol request (OpenAI chat completions, AI SDK UI message streams, AG-UI, A2A):
 * the call itself, the text and reasoning its stream adds, and what its agent tree does meanwhile (tool calls,
 * sub-agent calls), told to an observer that each protocol's encoder implements. Everything here goes through
 * the agent's public face: `call()`, its stream's chunks (`delta`, `reasoningDelta`) and its events.
 */

/** What `HTTPAgentServer` gives the protocols' routes: its agent, its policy and its bookkeeping of calls. */
export interface ProtocolHost {
  readonly agent: ServedAgent;
  /** What callers may set on a call (the server's `callerOptions`). */
  readonly callers: CallerOptions;
  /** Whether a failing agent's message goes to the client. */
  readonly exposeErrors: boolean;
  /** Whether the server asks for a bearer token. */
  readonly hasToken: boolean;
  /** The server's runs: the routes whose calls are runs start them here and serve their logs. */
  readonly runs: ServerRuns;
  /**
   * The server's `abortOnDisconnect` as given: a call started as a run is cancelled when its client goes away
   * only when it is `true` (by default it goes on, and its log can be followed again).
   */
  readonly abortOnDisconnect: boolean | undefined;
  /** Counts a call in flight (`close()` waits for it; its session is kept); the function returned ends it. */
  begin(controller: AbortController, sessionId: SessionId): () => void;
  /** Told about every call that failed. */
  onError(error: unknown, context: { route: string; sessionId: SessionId | undefined }): void;
  /** The session's state dict as committed (read from the store for a stored session). */
  stateOf(sessionId: SessionId): Promise<LagentStateDict>;
}

/** A tool call's answer, as text (with the error when the tool failed). */
export interface ToolResultText {
  text: string;
  error?: string | undefined;
}

/**
 * What a protocol's encoder is told while a call runs, in the order it happens. Paths are dotted paths in the
 * served agent's tree (`''`: the served agent itself).
 */
export interface RunObserver {
  /** The reply's text grew by `delta` (a streaming agent's chunk). */
  text(delta: string): void;
  /** The model's reasoning grew by `delta`. */
  reasoning(delta: string): void;
  /** The agent at `path` runs these tool calls. */
  toolsStarted(path: string, calls: readonly ToolCall[]): void;
  /** They returned: `results[i]` answers `calls[i]`. */
  toolsEnded(path: string, calls: readonly ToolCall[], results: readonly ToolResultText[]): void;
  /** A sub-agent was called (never the served agent, nor a prebuilt loop's own model turns). */
  agentStarted(path: string, name: string, description: string | undefined): void;
  /** That call ended. */
  agentEnded(path: string, outcome: 'done' | 'failed'): void;
}

/** One request's call. */
export interface RunRequest {
  sessionId: SessionId;
  input: MessageInput[];
  /** Call options (what the caller policy allowed). */
  options: Record<string, unknown>;
  signal: AbortSignal;
  /** Told what happens: the stream's text and reasoning, and (with `listen`) the tree's calls. */
  observer?: RunObserver | undefined;
  /** Listen to the agent tree's events for the observer. @default true */
  listen?: boolean | undefined;
  /** Waited on after each chunk: the client's pace (a response's buffer draining). */
  drained?: (() => Promise<void>) | undefined;
}

/** Thrown into a stream whose client went away. */
export const CLIENT_GONE = 'the client closed the connection';

/**
 * Runs the call and resolves to its final message (a streaming agent's return value or last chunk). The
 * observer hears the stream's text and reasoning and the tree's tool and sub-agent calls, for this call only:
 * events are told to the observer whose call (in the sense of `AsyncLocalStorage`) emitted them, so calls on
 * other sessions, or queued on the same one, are not mixed in.
 */
export async function runCall(host: ProtocolHost, request: RunRequest): Promise<AgentMessage> {
  const { agent } = host;
  const observer = request.observer;
  const tap =
    observer !== undefined && request.listen !== false && agent instanceof AgentBase
      ? tapOf(agent)
      : undefined;
  if (tap === undefined) return finish(await pull(agent, request));
  const release = tap.hold();
  try {
    return finish(await tap.within(observer!, () => pull(agent, request)));
  } finally {
    release();
  }
}

function finish(value: unknown): AgentMessage {
  const message = asOwnMessage(value);
  if (message !== undefined) return message;
  return new AgentMessage({
    sender: 'assistant',
    content: typeof value === 'string' ? value : value === undefined ? '' : value,
  });
}

async function pull(agent: ServedAgent, request: RunRequest): Promise<unknown> {
  const { observer, signal } = request;
  // An agent of another copy of lagent-ts takes its messages as JSON (its `AgentMessage.from` reads them).
  const input =
    agent instanceof AgentBase
      ? request.input
      : request.input.map((message) =>
          message instanceof AgentMessage ? (message.toJSON() as MessageInput) : message,
        );
  let result = agent.call(input, { ...request.options, sessionId: request.sessionId, signal });
  if (isThenable(result)) result = await result;
  if (!isIterator(result) || result instanceof AgentMessage) return result;
  const deltas = new ChunkDeltas(observer);
  let last: unknown;
  if (isAsyncIterator(result)) {
    const stream = result;
    for (;;) {
      const step = await stream.next();
      if (step.done) return step.value ?? last;
      last = step.value;
      deltas.take(step.value);
      if (signal.aborted) {
        await stream.return?.(undefined);
        throw signal.reason ?? new Error(CLIENT_GONE);
      }
      if (request.drained !== undefined) await request.drained();
    }
  }
  // A sync agent's stream is pulled without yielding to the event loop (nothing else may run on its session).
  const stream = result as Iterator<unknown>;
  for (;;) {
    const step = stream.next();
    if (step.done) return step.value ?? last;
    last = step.value;
    deltas.take(step.value);
  }
}

/** Reads the text and reasoning each streamed chunk adds. */
class ChunkDeltas {
  readonly #observer: RunObserver | undefined;
  /** The text of the last streamed chunk, to find what a chunk without `delta` adds. */
  #previous = '';

  constructor(observer: RunObserver | undefined) {
    this.#observer = observer;
  }

  take(chunk: unknown): void {
    const observer = this.#observer;
    if (observer === undefined) return;
    const message = chunk instanceof AgentMessage ? chunk : asOwnMessage(chunk);
    if (message === undefined || message.streamState !== AgentStatusCode.STREAM_ING) return;
    const reasoning = message.reasoningDelta;
    if (typeof reasoning === 'string' && reasoning !== '') observer.reasoning(reasoning);
    const content = message.content;
    if (typeof content !== 'string') return;
    let delta = message.delta;
    if (typeof delta !== 'string') {
      delta = content.startsWith(this.#previous) ? content.slice(this.#previous.length) : content;
    }
    this.#previous = content;
    if (delta !== '') observer.text(delta);
  }
}

/** The agent event kinds a run listens to. */
const KINDS = ['callStart', 'callEnd', 'error', 'toolStart', 'toolEnd'] as const;

/**
 * Listens to an agent tree's events while protocol calls run (not before the first, nor after the last, so the
 * server's other calls pay nothing for it) and tells each event to the observer of the call that emitted it.
 */
class EventTap {
  readonly #agent: AgentBase;
  readonly #current = new AsyncLocalStorage<RunObserver>();
  readonly #listeners: [string, (event: Record<string, unknown>) => void][];
  #holders = 0;
  /** Paths of the sub-agents that are prebuilt loops' own model turns (`agent` of a FunctionCallingAgent). */
  #modelTurns: Set<string> | undefined;

  constructor(agent: AgentBase) {
    this.#agent = agent;
    this.#listeners = KINDS.map((kind) => [
      kind,
      (event: Record<string, unknown>) => {
        const observer = this.#current.getStore();
        if (observer !== undefined) this.#tell(observer, kind, event);
      },
    ]);
  }

  hold(): () => void {
    if (this.#holders++ === 0) {
      this.#modelTurns = modelTurnPaths(this.#agent);
      const events = this.#agent.events as unknown as {
        on(kind: string, listener: (event: Record<string, unknown>) => void): void;
      };
      for (const [kind, listener] of this.#listeners) events.on(kind, listener);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holders === 0) {
        const events = this.#agent.events as unknown as {
          off(kind: string, listener: (event: Record<string, unknown>) => void): void;
        };
        for (const [kind, listener] of this.#listeners) events.off(kind, listener);
      }
    };
  }

  within<T>(observer: RunObserver, run: () => T): T {
    return this.#current.run(observer, run);
  }

  #tell(observer: RunObserver, kind: (typeof KINDS)[number], event: Record<string, unknown>): void {
    const path = typeof event.path === 'string' ? event.path : '';
    switch (kind) {
      case 'toolStart':
        observer.toolsStarted(path, (event.toolCalls as ToolCall[]) ?? []);
        return;
      case 'toolEnd': {
        const calls = (event.toolCalls as ToolCall[]) ?? [];
        const content = (event.message as { content?: unknown } | undefined)?.content;
        const results = calls.map((_, index) =>
          resultText(Array.isArray(content) ? content[index] : content),
        );
        observer.toolsEnded(path, calls, results);
        return;
      }
      default: {
        if (path === '' || this.#modelTurns?.has(path)) return;
        if (kind === 'callStart') {
          const agent = event.agent as { name?: unknown; description?: unknown } | undefined;
          observer.agentStarted(
            path,
            typeof agent?.name === 'string' ? agent.name : path,
            typeof agent?.description === 'string' ? agent.description : undefined,
          );
        } else observer.agentEnded(path, kind === 'callEnd' ? 'done' : 'failed');
      }
    }
  }
}

const taps = new WeakMap<AgentBase, EventTap>();

function tapOf(agent: AgentBase): EventTap {
  let tap = taps.get(agent);
  if (tap === undefined) {
    tap = new EventTap(agent);
    taps.set(agent, tap);
  }
  return tap;
}

/** The paths of the sub-agents whose calls are a prebuilt loop's model turns, not sub-agents of their own. */
export function modelTurnPaths(root: AgentBase): Set<string> {
  const paths = new Set<string>();
  const nodes = [...root.namedAgents()];
  for (const [, node] of nodes) {
    const turns = (node as unknown as { [TOOL_TURNS]?: unknown })[TOOL_TURNS];
    if (turns === undefined) continue;
    for (const [prefix, candidate] of nodes)
      if (candidate === turns && prefix !== '') paths.add(prefix.slice(0, -1));
  }
  return paths;
}

/** An `ActionReturn` (or its JSON) as text. */
export function resultText(result: unknown): ToolResultText {
  if (result === null || typeof result !== 'object')
    return { text: result === undefined ? '' : String(result) };
  const r = result as { result?: unknown; errmsg?: unknown };
  const error = typeof r.errmsg === 'string' && r.errmsg !== '' ? r.errmsg : undefined;
  let text: string;
  if (Array.isArray(r.result)) {
    text = r.result
      .map((item: { content?: unknown }) =>
        typeof item?.content === 'string' ? item.content : JSON.stringify(item),
      )
      .join('\n');
  } else if (typeof r.result === 'string') text = r.result;
  else text = r.result === undefined || r.result === null ? '' : JSON.stringify(r.result);
  return error === undefined ? { text } : { text: text === '' ? error : text, error };
}
