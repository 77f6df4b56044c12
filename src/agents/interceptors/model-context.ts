import type { Slot } from '../../core/interceptors';
import type { ChatMessage } from '../../schema/chat-message';
import type { SessionId } from '../../schema/session';
import type { AgentBase } from '../agent-base';
import type { Turn } from '../lifecycle/turn';

/**
 * What the `modelCall` hooks get: one model call of an agent's built-in forward, made in the agent's call
 * (`call`, whose slots `find` looks in after the model call's own). A hook may change `messages` (the prompt)
 * and `params` before `next()`.
 */
export class ModelContext {
  readonly call: Turn;
  readonly llm: unknown;
  messages: ChatMessage[];
  params: Record<string, unknown>;
  /** True when the reply streams: `next()` gives the whole reply once the stream has ended. */
  readonly streamed: boolean;
  /** The text a streamed reply gave before it failed or was left (what a budget counts): internal. */
  partial = '';
  #slots: unknown[] | undefined = undefined;

  constructor(
    call: Turn,
    llm: unknown,
    messages: ChatMessage[],
    params: Record<string, unknown>,
    streamed: boolean,
  ) {
    this.call = call;
    this.llm = llm;
    this.messages = messages;
    this.params = params;
    this.streamed = streamed;
  }

  get agent(): AgentBase {
    return this.call.agent;
  }

  get sessionId(): SessionId {
    return this.call.options.sessionId;
  }

  get signal(): AbortSignal | undefined {
    return this.call.options.signal;
  }

  get<T>(key: Slot<T>): T | undefined {
    const entries = this.#slots;
    if (entries === undefined) return undefined;
    for (let i = 0; i < entries.length; i += 2) if (entries[i] === key) return entries[i + 1] as T;
    return undefined;
  }

  set<T>(key: Slot<T>, value: T | undefined): void {
    const entries = this.#slots;
    if (entries === undefined) {
      if (value !== undefined) this.#slots = [key, value];
      return;
    }
    for (let i = 0; i < entries.length; i += 2) {
      if (entries[i] !== key) continue;
      if (value === undefined) entries.splice(i, 2);
      else entries[i + 1] = value;
      return;
    }
    if (value !== undefined) entries.push(key, value);
  }

  find<T>(key: Slot<T>): T | undefined {
    return this.get(key) ?? this.call.find(key);
  }
}
