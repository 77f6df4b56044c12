import { driveAsync, driveSync, type Steps } from '../core/steps';
import { driveStream, driveStreamAsync } from '../core/stream-drivers';
import type { AsyncHook, SyncHook } from '../hooks/hook';
import type { AsyncBaseLLM, BaseLLM } from '../llms/base-llm';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import { Agent } from './agent';
import type {
  AgentBase,
  AsyncCallOptions,
  AsyncForwardOptions,
  CallOptions,
  ForwardOptions,
} from './agent-base';
import type { AgentClass } from './agent-class';
import { type AgentNode, checkChildKey, isAgentNode } from './agent-tree';
import { AsyncAgent } from './async-agent';
import { AsyncStreamingAgent } from './async-streaming-agent';
import { needsDriving } from './lifecycle';
import { StreamingAgent } from './streaming-agent';

/** Options of a sequential `call()`: `exitAt` is the index of the last step (it may exceed the length: steps cycle). */
export type SequentialCallOptions = { exitAt?: number };

type Input = MessageInput | readonly MessageInput[];

/*
 * Members of each variant, whatever their replies hold: an `Agent` subclass whose forward returns another
 * kind of message is not an `Agent` to the compiler (its `call` returns something else), but is a member.
 */
type SyncMember = AgentBase<BaseLLM, unknown, SyncHook> & {
  call(input?: Input, options?: CallOptions): AgentMessage;
};
type AsyncMember = AgentBase<AsyncBaseLLM, unknown, AsyncHook> & {
  call(input?: Input, options?: AsyncCallOptions): Promise<AgentMessage>;
};
type StreamingMember = AgentBase<BaseLLM, unknown, SyncHook> & {
  call(input?: Input, options?: CallOptions): Generator<AgentMessage, AgentMessage, undefined>;
};
type AsyncStreamingMember = AgentBase<AsyncBaseLLM, unknown, AsyncHook> & {
  call(input?: Input, options?: AsyncCallOptions): AsyncGenerator<AgentMessage, AgentMessage, undefined>;
};

interface Callable {
  call(input: unknown, options: Record<string, unknown>): unknown;
}

type Members<T> = T[] | [Record<string, T>];

function toEntries<T>(owner: string, members: Members<T>): [string, T][] {
  const first = members[0];
  const entries: [string, unknown][] =
    members.length === 1 && first !== null && typeof first === 'object' && !isAgentNode(first)
      ? Object.entries(first as Record<string, T>)
      : members.map((agent, i) => [String(i), agent]);
  if (entries.length === 0) throw new ConfigurationError({ message: `${owner} needs at least one agent` });
  for (const [key, agent] of entries) {
    checkChildKey(key);
    if (!isAgentNode(agent) || typeof (agent as Partial<Callable>).call !== 'function') {
      throw new ConfigurationError({ message: `${owner}: member "${key}" is not an agent` });
    }
  }
  return entries as [string, T][];
}

/** The steps of every sequential variant: each member's reply is the next one's input. */
function* sequentialSteps(
  owner: string,
  members: readonly [string, Callable][],
  messages: AgentMessage[],
  options: Record<string, unknown>,
): Steps<AgentMessage> {
  const { exitAt, ...rest } = options as Record<string, unknown> & SequentialCallOptions;
  if (exitAt !== undefined && !(Number.isInteger(exitAt) && exitAt >= 0)) {
    throw new ConfigurationError({
      message: `${owner}: exitAt must be a non-negative integer, got ${String(exitAt)}`,
    });
  }
  const steps = exitAt === undefined ? members.length : exitAt + 1;
  let current: AgentMessage | AgentMessage[] = messages;
  for (let i = 0; i < steps; i++) {
    const [, agent] = members[i % members.length]!;
    let output: unknown = agent.call(current, rest);
    if (needsDriving(output)) output = yield output;
    current = output as AgentMessage;
  }
  return current as AgentMessage;
}

/** Where the mixin keeps the steps of a call; module-private, so it is not part of the public API. */
const STEPS = Symbol('lagent-ts.sequentialSteps');

/** What the sequential variants add to the agent class they extend. */
export interface SequentialMembers<M> {
  /** Number of members. */
  readonly length: number;
  /** A member by position (negative counts from the end) or by key. */
  get(key: number | string): M | undefined;
}

/**
 * The member bookkeeping every sequential variant shares, written once on top of the variant's agent
 * class; each variant then only says how its steps are driven.
 */
function withMembers<M extends AgentNode, A extends AgentBase>(Base: AgentClass<A>, owner: string) {
  abstract class WithMembers extends (Base as AgentClass<AgentBase>) implements SequentialMembers<M> {
    readonly #entries: [string, M][];

    constructor(...agents: Members<M>) {
      super();
      this.#entries = toEntries(owner, agents);
    }

    get length(): number {
      return this.#entries.length;
    }

    get(key: number | string): M | undefined {
      if (typeof key === 'number') return this.#entries.at(key)?.[1];
      return this.#entries.find(([name]) => name === key)?.[1];
    }

    override children(): [string, AgentNode][] {
      return [...this.#entries];
    }

    /** The steps of one call over the members. */
    [STEPS](messages: AgentMessage[], options: Record<string, unknown>): Steps<AgentMessage> {
      return sequentialSteps(this.name, this.#entries as unknown as [string, Callable][], messages, options);
    }
  }
  return WithMembers as unknown as AgentClass<A & SequentialMembers<M> & SequentialSteps> & {
    new (...agents: Members<M>): A & SequentialMembers<M> & SequentialSteps;
  };
}

interface SequentialSteps {
  [STEPS](messages: AgentMessage[], options: Record<string, unknown>): Steps<AgentMessage>;
}

/**
 * Runs its agents in order, each reply the next one's input (like `nn.Sequential`). Members are keyed
 * `0, 1, ...` or by name when given an object; `options.exitAt` stops after that step (cycling past the end).
 *
 * @example
 * const pipeline = new Sequential(drafter, reviewer);
 * pipeline.call('Write a haiku', { sessionId: 1 });
 */
export class Sequential extends withMembers<SyncMember, Agent>(Agent, 'Sequential') {
  override forward(messages: AgentMessage[], options: ForwardOptions & SequentialCallOptions): AgentMessage {
    return driveSync(this[STEPS](messages, options));
  }
}

/** {@link Sequential} for async agents (sync members are run too). */
export class AsyncSequential extends withMembers<AsyncMember | SyncMember, AsyncAgent>(
  AsyncAgent,
  'AsyncSequential',
) {
  override forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions & SequentialCallOptions,
  ): Promise<AgentMessage> {
    return driveAsync(this[STEPS](messages, options));
  }
}

/** {@link Sequential} for streaming agents: every member's chunks are streamed through. */
export class StreamingSequential extends withMembers<StreamingMember | SyncMember, StreamingAgent>(
  StreamingAgent,
  'StreamingSequential',
) {
  override forward(
    messages: AgentMessage[],
    options: ForwardOptions & SequentialCallOptions,
  ): Generator<AgentMessage, AgentMessage, undefined> {
    return driveStream(this[STEPS](messages, options), this.name, false);
  }
}

/** {@link Sequential} for async streaming agents (any other variant may be a member too). */
export class AsyncStreamingSequential extends withMembers<
  AsyncStreamingMember | StreamingMember | AsyncMember | SyncMember,
  AsyncStreamingAgent
>(AsyncStreamingAgent, 'AsyncStreamingSequential') {
  override forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions & SequentialCallOptions,
  ): AsyncGenerator<AgentMessage, AgentMessage, undefined> {
    return driveStreamAsync(this[STEPS](messages, options), this.name, false);
  }
}
