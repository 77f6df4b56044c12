import { finalReply } from '../agents/final-reply';
import { AgentMessage, type MessageInput } from '../schema/agent-message';
import type { SessionId } from '../schema/session';
import { CliError } from './errors';

/**
 * What the commands drive: any agent of lagent-ts (sync or async, streaming or not, composite or prebuilt), or
 * anything with `call` and `stateDict` in their shape (a remote agent client, for instance).
 */
export interface AgentLike {
  readonly name?: string | undefined;
  call(input: MessageInput | readonly MessageInput[], options: Record<string, unknown>): unknown;
  stateDict(sessionId?: SessionId, options?: Record<string, unknown>): unknown;
  loadStateDict?(dict: any, sessionId?: SessionId): unknown;
  reset?(sessionId?: SessionId, options?: Record<string, unknown>): unknown;
  /** The interrupts a session waits for (agents of lagent-ts: `AgentBase.pendingInterrupts`). */
  pendingInterrupts?(sessionId?: SessionId): unknown;
}

/** Whether `value` looks like an agent: an object with `call` and `stateDict` methods. */
export function isAgentLike(value: unknown): value is AgentLike {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { call?: unknown }).call === 'function' &&
    typeof (value as { stateDict?: unknown }).stateDict === 'function'
  );
}

function toMessage(value: unknown): AgentMessage {
  if (value instanceof AgentMessage) return value;
  try {
    // A message of another copy of the library (an agent module importing the published package) is not an
    // instance of this AgentMessage: go through its JSON.
    const toJSON = (value as { toJSON?: unknown } | null)?.toJSON;
    return AgentMessage.from(typeof toJSON === 'function' ? toJSON.call(value) : value);
  } catch (error) {
    throw new CliError('the agent replied with something that is not a message', { cause: error });
  }
}

/** Options of one call made by a command. */
export interface RunOptions {
  sessionId: SessionId;
  signal?: AbortSignal | undefined;
  /** Told about every streamed message, the final one included (streaming agents only). */
  onChunk?: ((chunk: AgentMessage) => void) | undefined;
  /** The call's budget (`{}` limits nothing and has the reply say what the call spent). */
  budget?: Record<string, number | undefined> | undefined;
}

/**
 * Calls `agent` once and gives its final reply, whatever kind of agent it is: a message (sync agent), a
 * promise of one (async agent), or a stream of chunks ending with the final message (streaming agents; each
 * streamed message goes to `onChunk` as it arrives).
 */
export async function runAgent(
  agent: AgentLike,
  input: MessageInput | readonly MessageInput[],
  options: RunOptions,
): Promise<AgentMessage> {
  const { onChunk, ...callOptions } = options;
  if (callOptions.signal === undefined) delete callOptions.signal;
  const result = await finalReply(
    agent.call(input, callOptions),
    onChunk && ((chunk: unknown) => onChunk(toMessage(chunk))),
  );
  if (result === undefined) throw new CliError('the agent streamed nothing');
  return toMessage(result);
}

/**
 * The agent as one whose `call` gives the final message (a streaming agent's stream is read to its end), for
 * hosts that expect a message, such as the queue worker. Every other property is the agent's own.
 */
export function asMessageAgent<A extends AgentLike>(agent: A): A {
  return new Proxy(agent, {
    get(target, property) {
      if (property === 'call') {
        return (input: MessageInput | readonly MessageInput[], options: Record<string, unknown> = {}) =>
          runAgent(target, input, {
            sessionId: (options.sessionId as SessionId | undefined) ?? 0,
            ...options,
          } as RunOptions);
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
