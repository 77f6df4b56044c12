import { type Slot, Slots } from '../../core/interceptors';
import type { ChatMessage } from '../../schema/chat-message';
import type { SessionId } from '../../schema/session';
import type { AgentBase } from '../agent-base';
import type { Turn } from '../lifecycle/turn';

/**
 * What the `modelCall` hooks get: one model call of an agent's built-in forward, made in the agent's call
 * (`call`, whose slots `find` looks in after the model call's own). A hook may change `messages` (the prompt)
 * and `params` before `next()`.
 */
export class ModelContext extends Slots {
  readonly call: Turn;
  readonly llm: unknown;
  messages: ChatMessage[];
  params: Record<string, unknown>;
  /** True when the reply streams: `next()` gives the whole reply once the stream has ended. */
  readonly streamed: boolean;
  /** The text a streamed reply gave before it failed or was left (what a budget counts): internal. */
  partial = '';

  constructor(
    call: Turn,
    llm: unknown,
    messages: ChatMessage[],
    params: Record<string, unknown>,
    streamed: boolean,
  ) {
    super();
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

  find<T>(key: Slot<T>): T | undefined {
    return this.get(key) ?? this.call.find(key);
  }
}
