import type { AgentMessage } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import { driveAsync, driveSync, type Steps } from '../utils/steps';
import { Agent } from './agent';
import type { AsyncForwardOptions, ForwardOptions } from './agent-base';
import { AsyncAgent } from './async-agent';
import { AsyncStreamingAgent } from './async-streaming-agent';
import { driveStream, driveStreamAsync } from './drive';
import { needsDriving } from './lifecycle';
import { type AgentNode, checkChildKey, isAgentNode } from './node';
import { StreamingAgent } from './streaming-agent';

/** Options of a sequential `call()`: `exitAt` is the index of the last step (it may exceed the length: steps cycle). */
export type SequentialCallOptions = { exitAt?: number };

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

/** Shared parts of the sequential variants; `T` is the member type. */
function sequentialApi<T extends AgentNode>(entries: [string, T][]) {
  return {
    get(key: number | string): T | undefined {
      if (typeof key === 'number') return entries.at(key)?.[1];
      return entries.find(([name]) => name === key)?.[1];
    },
    children: (): [string, AgentNode][] => entries.map(([key, agent]) => [key, agent]),
  };
}

/**
 * Runs its agents in order, each reply the next one's input (like `nn.Sequential`). Members are keyed
 * `0, 1, ...` or by name when given an object; `options.exitAt` stops after that step (cycling past the end).
 *
 * @example
 * const pipeline = new Sequential(drafter, reviewer);
 * pipeline.call('Write a haiku', { sessionId: 1 });
 */
export class Sequential extends Agent {
  readonly #entries: [string, Agent][];
  readonly #api;

  constructor(...agents: Members<Agent>) {
    super();
    this.#entries = toEntries('Sequential', agents);
    this.#api = sequentialApi(this.#entries);
  }

  get length(): number {
    return this.#entries.length;
  }

  get(key: number | string): Agent | undefined {
    return this.#api.get(key);
  }

  override children(): [string, AgentNode][] {
    return this.#api.children();
  }

  override forward(messages: AgentMessage[], options: ForwardOptions & SequentialCallOptions): AgentMessage {
    return driveSync(sequentialSteps(this.name, this.#entries, messages, options));
  }
}

/** {@link Sequential} for async agents (sync members are run too). */
export class AsyncSequential extends AsyncAgent {
  readonly #entries: [string, AsyncAgent | Agent][];
  readonly #api;

  constructor(...agents: Members<AsyncAgent | Agent>) {
    super();
    this.#entries = toEntries('AsyncSequential', agents);
    this.#api = sequentialApi(this.#entries);
  }

  get length(): number {
    return this.#entries.length;
  }

  get(key: number | string): AsyncAgent | Agent | undefined {
    return this.#api.get(key);
  }

  override children(): [string, AgentNode][] {
    return this.#api.children();
  }

  override forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions & SequentialCallOptions,
  ): Promise<AgentMessage> {
    return driveAsync(sequentialSteps(this.name, this.#entries, messages, options));
  }
}

/** {@link Sequential} for streaming agents: every member's chunks are streamed through. */
export class StreamingSequential extends StreamingAgent {
  readonly #entries: [string, StreamingAgent | Agent][];
  readonly #api;

  constructor(...agents: Members<StreamingAgent | Agent>) {
    super();
    this.#entries = toEntries('StreamingSequential', agents);
    this.#api = sequentialApi(this.#entries);
  }

  get length(): number {
    return this.#entries.length;
  }

  get(key: number | string): StreamingAgent | Agent | undefined {
    return this.#api.get(key);
  }

  override children(): [string, AgentNode][] {
    return this.#api.children();
  }

  override forward(
    messages: AgentMessage[],
    options: ForwardOptions & SequentialCallOptions,
  ): Generator<AgentMessage, AgentMessage, undefined> {
    return driveStream(sequentialSteps(this.name, this.#entries, messages, options), this.name, false);
  }
}

/** {@link Sequential} for async streaming agents (any other variant may be a member too). */
export class AsyncStreamingSequential extends AsyncStreamingAgent {
  readonly #entries: [string, AsyncStreamingAgent | StreamingAgent | AsyncAgent | Agent][];
  readonly #api;

  constructor(...agents: Members<AsyncStreamingAgent | StreamingAgent | AsyncAgent | Agent>) {
    super();
    this.#entries = toEntries('AsyncStreamingSequential', agents);
    this.#api = sequentialApi(this.#entries);
  }

  get length(): number {
    return this.#entries.length;
  }

  get(key: number | string): AsyncStreamingAgent | StreamingAgent | AsyncAgent | Agent | undefined {
    return this.#api.get(key);
  }

  override children(): [string, AgentNode][] {
    return this.#api.children();
  }

  override forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions & SequentialCallOptions,
  ): AsyncGenerator<AgentMessage, AgentMessage, undefined> {
    return driveStreamAsync(sequentialSteps(this.name, this.#entries, messages, options), this.name, false);
  }
}
