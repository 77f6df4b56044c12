import type { ServerResponse } from 'node:http';
import type { AgentBase, AgentEvents, RecalledMessage } from '../agents/agent-base';
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
  'recall',
  'workingMemory',
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
  /**
   * What the event carries, by kind: texts, tool calls, results, the error, interrupts, decisions; for `recall`
   * the query and the messages recalled (content, sender, session, score); for `workingMemory` the new record.
   */
  detail: unknown;
}

/** Longest text an event carries. */
const MAX_TEXT = 4_000;
/** Most input messages a `callStart` event shows (the last ones). */
const MAX_MESSAGES = 16;

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

/** Most recalled messages a `recall` event shows (the most similar ones). */
const MAX_RECALLED = 32;

/** Most tool calls (and results) an event shows (the first ones). */
const MAX_TOOL_CALLS = 32;

function toolCalls(calls: readonly ToolCallLike[]): unknown[] {
  return calls
    .slice(0, MAX_TOOL_CALLS)
    .map((call) => ({ id: call.id, name: call.name, arguments: cut(call.arguments) }));
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
    case 'callStart': {
      const messages = (event.messages as { content?: unknown; type?: unknown }[]) ?? [];
      // The last ones: a call given a whole history would otherwise make one event of it.
      const shown = messages
        .slice(-MAX_MESSAGES)
        .map((m) => ({ type: m.type ?? null, content: cut(m.content) }));
      return messages.length > MAX_MESSAGES
        ? { messages: shown, omitted: messages.length - MAX_MESSAGES }
        : { messages: shown };
    }
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
        results: Array.isArray(results) ? results.slice(0, MAX_TOOL_CALLS).map(resultText) : [cut(results)],
      };
    }
    case 'interrupt':
      return { interrupts: event.interrupts };
    case 'resume':
      return { decisions: event.decisions };
    case 'recall': {
      const recalled = (event.recalled as RecalledMessage[] | undefined) ?? [];
      return {
        query: cut(event.query),
        recalled: recalled.slice(0, MAX_RECALLED).map((message) => ({
          content: cut(message.content),
          sender: message.sender,
          sessionId: message.sessionId,
          score: message.score,
        })),
        omitted: Math.max(0, recalled.length - MAX_RECALLED),
      };
    }
    case 'workingMemory':
      return { scope: event.scope, resourceId: event.resourceId, value: cut(event.value) };
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
  /** Events sent so far: the last of them is at `#sent - 1`, the first one kept at `#sent - #recent.length`. */
  #sent = 0;
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

  /** How many events were sent so far (the position the next one takes). */
  get sent(): number {
    return this.#sent;
  }

  /**
   * The event sent at `position` (0 for the first event ever); undefined when it is no longer kept (or not
   * sent yet).
   */
  at(position: number): UIEvent | undefined {
    return this.#recent[position - (this.#sent - this.#recent.length)];
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
    this.#sent++;
    if (this.#recent.length > this.#keep) this.#recent.splice(0, this.#recent.length - this.#keep);
    for (const subscriber of this.#subscribers) subscriber(event);
  }
}

/** Limits of {@link EventStreams}. */
export interface EventStreamLimits {
  /** Event streams open at once; one more is answered 503. @default 32 */
  maxStreams?: number | undefined;
  /** Milliseconds between the comments that keep an idle stream open through proxies. @default 15_000 */
  keepAliveMs?: number | undefined;
}

/** An event in its wire form, made once however many streams send it. */
const frames = new WeakMap<UIEvent, string>();

function frameOf(event: UIEvent): string {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = `event: agent\ndata: ${JSON.stringify(event)}\n\n`;
    frames.set(event, frame);
  }
  return frame;
}

/**
 * The server-sent event streams of `GET /ui/events`: each sends the relay's recent events, then every later
 * one, as fast as its client reads. Nothing is queued per client: a stream is a position in the relay's recent
 * events, written until its response's buffer reaches its high-water mark (16 KiB) and again once it drains, so
 * a client that stops reading holds little of this process's memory (the high-water mark, what its socket had
 * in flight when the kernel's buffer filled, and one event: under 150 KB). Once the events
 * it still needs are no longer kept, it is dropped, with a warning (`LAGENT_UI_SLOW_CLIENT`); a page then
 * reconnects and starts again from the recent events. At most `maxStreams` are open at once.
 */
export class EventStreams {
  readonly #relay: EventRelay | undefined;
  readonly #maxStreams: number;
  readonly #keepAliveMs: number;
  readonly #streams = new Set<EventStream>();
  #unsubscribe: (() => void) | undefined;

  constructor(relay: EventRelay | undefined, limits: EventStreamLimits = {}) {
    this.#relay = relay;
    this.#maxStreams = limits.maxStreams ?? 32;
    this.#keepAliveMs = limits.keepAliveMs ?? 15_000;
  }

  /** Streams open now. */
  get size(): number {
    return this.#streams.size;
  }

  /** Answers `response` with the event stream, or 503 when `maxStreams` are open. */
  open(response: ServerResponse): void {
    if (this.#streams.size >= this.#maxStreams) {
      response.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '5' });
      response.end(
        JSON.stringify({
          detail: `the server holds its maximum of ${this.#maxStreams} event streams`,
          error: 'TooManyStreams',
        }),
      );
      return;
    }
    const relay = this.#relay;
    if (relay !== undefined && this.#unsubscribe === undefined) {
      this.#unsubscribe = relay.subscribe(() => {
        for (const stream of this.#streams) stream.pump();
      });
    }
    const stream = new EventStream(relay, response, this.#keepAliveMs, () => {
      this.#streams.delete(stream);
      if (this.#streams.size === 0) {
        this.#unsubscribe?.();
        this.#unsubscribe = undefined;
      }
    });
    this.#streams.add(stream);
    stream.pump();
  }

  /** Ends every stream. */
  close(): void {
    for (const stream of this.#streams) stream.end();
  }
}

/** One client's event stream: the position of the next event it gets. */
class EventStream {
  readonly #relay: EventRelay | undefined;
  readonly #response: ServerResponse;
  readonly #timer: NodeJS.Timeout;
  readonly #onEnd: () => void;
  #next: number;
  /** The response's buffer is full: nothing is written until it drains. */
  #full = false;
  #ended = false;

  constructor(
    relay: EventRelay | undefined,
    response: ServerResponse,
    keepAliveMs: number,
    onEnd: () => void,
  ) {
    this.#relay = relay;
    this.#response = response;
    this.#onEnd = onEnd;
    this.#next = relay === undefined ? 0 : relay.sent - relay.recent().length;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    this.#write(': events of the agent tree\n\n');
    this.#timer = setInterval(() => {
      if (!this.#full) this.#write(': keep-alive\n\n');
    }, keepAliveMs);
    this.#timer.unref();
    response.on('drain', () => {
      this.#full = false;
      this.pump();
    });
    response.once('close', () => this.#finish());
  }

  /** Writes the events the client has not had yet, until the response's buffer is full. */
  pump(): void {
    const relay = this.#relay;
    if (this.#ended || relay === undefined) return;
    if (this.#next < relay.sent && relay.at(this.#next) === undefined) {
      process.emitWarning(
        `lagent ui: dropped an event stream whose client stopped reading (${relay.sent - this.#next} events behind); it starts again from the recent events when it reconnects`,
        { code: 'LAGENT_UI_SLOW_CLIENT' },
      );
      // Not end(): that would wait for the client to read what is buffered, holding it meanwhile.
      this.#response.destroy();
      this.#finish();
      return;
    }
    while (!this.#full && this.#next < relay.sent) this.#write(frameOf(relay.at(this.#next++)!));
  }

  /** Ends the stream (what was written is still delivered). */
  end(): void {
    if (this.#ended) return;
    this.#finish();
    this.#response.end();
  }

  #write(text: string): void {
    if (!this.#response.write(text)) this.#full = true;
  }

  #finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#timer);
    this.#onEnd();
  }
}
