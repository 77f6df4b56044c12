import type { AgentBase, AgentEvents } from '../agents/agent-base';
import type { SessionId } from '../schema/session';
import { isThenable } from '../utils/is';
import { errorMessage } from '../utils/text';

/** The agent event kinds the page shows. */
export const UI_EVENT_KINDS = [
  'callStart',
  'callEnd',
  'llmStart',
  'llmEnd',
  'error',
  'toolStart',
  'toolEnd',
  'interrupt',
  'resume',
] as const satisfies readonly (keyof AgentEvents)[];

/** One agent event as the page receives it: plain JSON, long texts cut. */
export interface UIEvent {
  /** Increases by one per event; the page drops events it already has. */
  seq: number;
  kind: (typeof UI_EVENT_KINDS)[number];
  /** The agent's dotted path in the tree (`''`: the root, `agent`, `researcher`, ...). */
  path: string;
  /** The agent's name. */
  agent: string;
  sessionId: SessionId;
  /** Milliseconds since the epoch. */
  time: number;
  /** On an event that ends something (`callEnd`, `error`, `interrupt`, `llmEnd`, `toolEnd`): how long it took. */
  ms?: number | undefined;
  /** On `llmEnd`, when the model reports its usage. */
  tokens?: { prompt: number; completion: number } | undefined;
  /** What the event carries, by kind: texts, tool calls, results, the error, interrupts, decisions. */
  detail: unknown;
}

/** Longest text an event carries. */
const MAX_TEXT = 4_000;

function cut(value: unknown): string {
  const text = typeof value === 'string' ? value : safeJSON(value);
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
}

function safeJSON(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Which start an ending event closes. */
const STARTS: Partial<Record<UIEvent['kind'], string>> = {
  callEnd: 'call',
  error: 'call',
  interrupt: 'call',
  llmEnd: 'llm',
  toolEnd: 'tool',
};

interface ToolCallLike {
  id?: unknown;
  name?: unknown;
  arguments?: unknown;
}

function toolCalls(calls: readonly ToolCallLike[]): unknown[] {
  return calls.map((call) => ({ id: call.id, name: call.name, arguments: cut(call.arguments) }));
}

/** An `ActionReturn`'s result as text. */
function resultText(result: unknown): string {
  const r = result as { result?: unknown; errmsg?: unknown } | null;
  if (r === null || typeof r !== 'object') return cut(result);
  if (typeof r.errmsg === 'string' && r.errmsg !== '') return cut(`error: ${r.errmsg}`);
  if (Array.isArray(r.result)) {
    return cut(
      r.result
        .map((item: { content?: unknown }) =>
          typeof item?.content === 'string' ? item.content : safeJSON(item),
        )
        .join('\n'),
    );
  }
  return cut(r.result);
}

function detailOf(kind: UIEvent['kind'], event: Record<string, unknown>): unknown {
  switch (kind) {
    case 'callStart':
      return {
        messages: ((event.messages as { content?: unknown; type?: unknown }[]) ?? []).map((m) => ({
          type: m.type ?? null,
          content: cut(m.content),
        })),
      };
    case 'callEnd': {
      const message = event.message as { content?: unknown; type?: unknown } | undefined;
      return { type: message?.type ?? null, content: cut(message?.content) };
    }
    case 'llmStart':
      return { messages: (event.messages as unknown[] | undefined)?.length ?? 0 };
    case 'llmEnd':
      return { response: cut(event.response) };
    case 'error':
      return { error: cut(errorMessage(event.error)) };
    case 'toolStart':
      return { toolCalls: toolCalls((event.toolCalls as ToolCallLike[]) ?? []) };
    case 'toolEnd': {
      const results = (event.message as { content?: unknown } | undefined)?.content;
      return {
        toolCalls: toolCalls((event.toolCalls as ToolCallLike[]) ?? []),
        results: Array.isArray(results) ? results.map(resultText) : [cut(results)],
      };
    }
    case 'interrupt':
      return { interrupts: event.interrupts };
    case 'resume':
      return { decisions: event.decisions };
  }
}

interface Usage {
  promptTokens?: unknown;
  completionTokens?: unknown;
}

function tokensOf(usage: Usage | undefined): UIEvent['tokens'] {
  if (usage === undefined || usage === null) return undefined;
  const { promptTokens, completionTokens } = usage;
  if (typeof promptTokens !== 'number' || typeof completionTokens !== 'number') return undefined;
  return { prompt: promptTokens, completion: completionTokens };
}

/**
 * Listens to every event of an agent's tree (the root's listeners get its sub-agents' events with their
 * `path`), turns each into a {@link UIEvent} and hands it to the subscribers. Keeps the last `keep` events so
 * a page that connects later sees the recent ones.
 */
export class EventRelay {
  readonly #agent: AgentBase;
  readonly #keep: number;
  readonly #recent: UIEvent[] = [];
  readonly #subscribers = new Set<(event: UIEvent) => void>();
  readonly #starts = new Map<string, number[]>();
  readonly #listeners: [keyof AgentEvents, (event: never) => void][] = [];
  #seq = 0;

  constructor(agent: AgentBase, options: { keep?: number } = {}) {
    this.#agent = agent;
    this.#keep = options.keep ?? 500;
    for (const kind of UI_EVENT_KINDS) {
      const listener = (event: Record<string, unknown>) => this.#take(kind, event);
      this.#listeners.push([kind, listener as (event: never) => void]);
      (agent.events.on as (kind: string, listener: (event: Record<string, unknown>) => void) => void)(
        kind,
        listener,
      );
    }
  }

  /** The events kept, oldest first. */
  recent(): readonly UIEvent[] {
    return this.#recent;
  }

  /** Calls `listener` with every later event; returns the function that stops it. */
  subscribe(listener: (event: UIEvent) => void): () => void {
    this.#subscribers.add(listener);
    return () => this.#subscribers.delete(listener);
  }

  /** Stops listening to the agent. */
  close(): void {
    for (const [kind, listener] of this.#listeners) {
      (this.#agent.events.off as (kind: string, listener: unknown) => void)(kind, listener);
    }
    this.#listeners.length = 0;
    this.#subscribers.clear();
  }

  #take(kind: UIEvent['kind'], event: Record<string, unknown>): void {
    const time = Date.now();
    const path = typeof event.path === 'string' ? event.path : '';
    const sessionId = event.sessionId as SessionId;
    const agent = event.agent as AgentBase | undefined;
    const group =
      kind === 'callStart' ? 'call' : kind === 'llmStart' ? 'llm' : kind === 'toolStart' ? 'tool' : undefined;
    let ms: number | undefined;
    if (group !== undefined) {
      const key = `${group}\u0000${String(sessionId)}\u0000${path}`;
      const stack = this.#starts.get(key);
      if (stack) stack.push(time);
      else this.#starts.set(key, [time]);
    } else {
      const ends = STARTS[kind];
      if (ends !== undefined) {
        const key = `${ends}\u0000${String(sessionId)}\u0000${path}`;
        const stack = this.#starts.get(key);
        const start = stack?.pop();
        if (stack?.length === 0) this.#starts.delete(key);
        if (start !== undefined) ms = time - start;
      }
    }
    const uiEvent: UIEvent = {
      seq: ++this.#seq,
      kind,
      path,
      agent: agent?.name ?? '',
      sessionId,
      time,
      ms,
      tokens: undefined,
      detail: detailOf(kind, event),
    };
    if (kind === 'llmEnd') {
      const usage = this.#usage(agent);
      if (isThenable(usage)) {
        // A model whose usage is read asynchronously: the event goes out once it is known.
        Promise.resolve(usage).then(
          (value) => this.#send({ ...uiEvent, tokens: tokensOf(value) }),
          () => this.#send(uiEvent),
        );
        return;
      }
      uiEvent.tokens = tokensOf(usage);
    }
    this.#send(uiEvent);
  }

  #usage(agent: AgentBase | undefined): Usage | undefined | PromiseLike<Usage | undefined> {
    try {
      const llm = agent?.llm as { getLastUsage?(): Usage | undefined } | undefined;
      return llm?.getLastUsage?.();
    } catch {
      return undefined;
    }
  }

  #send(event: UIEvent): void {
    this.#recent.push(event);
    if (this.#recent.length > this.#keep) this.#recent.splice(0, this.#recent.length - this.#keep);
    for (const subscriber of this.#subscribers) subscriber(event);
  }
}
