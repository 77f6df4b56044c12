import { EventEmitter } from 'eventemitter3';
import { checkInterceptor } from '../core/interceptors';
import { SessionLanes } from '../core/session-lanes';
import { type Hook, HookList, type RemovableHandle } from '../hooks/hook';
import type { GenParams, ToolSpec } from '../llms/types';
import { Memory, type MemoryOptions } from '../memory/memory';
import { MemoryManager, type MemoryManagerOptions, SESSION_IN_USE } from '../memory/memory-manager';
import type { OutputParser } from '../prompts/output-parser';
import { AgentMessage } from '../schema/agent-message';
import type { ChatMessage, OpenAITool, ToolCall } from '../schema/chat-message';
import { ConfigurationError, StateDictError } from '../schema/errors';
import type { Decision, Interrupt } from '../schema/interrupts';
import { type SessionId, sessionKey } from '../schema/session';
import type { SessionStore } from '../stores/types';
import { isThenable } from '../utils/is';
import { CHAIN, EMITTER, LANES } from './agent-symbols';
import { AGENT_NODE, type AgentNode, discoverChildren, type MemoryNode, renderTree } from './agent-tree';
import { DefaultAggregator, type SystemInstruction } from './aggregator/default-aggregator';
import type { Budget } from './interceptors/budget/meter';
import {
  CallNotRecovered,
  checkDurable,
  DURABLE,
  type DurableOptions,
  RECOVERING,
} from './interceptors/durable/journal';
import type { Recall } from './interceptors/recall/recall';
import { FORGET_RECALLED, RECALL_INDEX } from './interceptors/recall/symbols';
import { asStoreError } from './interceptors/session-store/lease';
import {
  checkSyncStore,
  type MemoryStoreOptions,
  SESSION_BINDING,
  SessionBinding,
  SYNC_AGENT,
} from './interceptors/session-store/persist';
import type { Interceptor, InterceptorFor } from './interceptors/types';
import { WorkingMemory, type WorkingMemoryOptions } from './interceptors/working-memory/record';
import { sessionRecordsOf, WORKING_MEMORY } from './interceptors/working-memory/symbol';
import { observers } from './observers';
import { pendingInterrupts } from './pending-interrupts';
import {
  type LagentStateDict,
  loadStateDict,
  type StateDict,
  type StateDictOptions,
  saveStateDict,
} from './state-dict';

/** How an agent gets its per-session memory. */
export type MemoryConfig =
  | (MemoryOptions & MemoryManagerOptions & Partial<MemoryStoreOptions>)
  | (() => Memory)
  | null;

/**
 * Options shared by every agent variant: `L` is the kind of model it accepts, `F` what its output parser
 * gives (the reply's `formatted`), `H` the kind of hook it runs.
 */
export interface AgentOptions<L, F = unknown, H extends Hook = Hook> {
  /** The model. Composite agents that only orchestrate sub-agents need none. */
  llm?: L | undefined;
  /** The system instruction. */
  template?: SystemInstruction | undefined;
  /**
   * `{ recentN, maxSessions }`, a factory of `Memory`, or `null` for no memory. With `store`, every session's
   * memories (this agent's and its sub-agents') are kept in that store, a turn at a time: see
   * {@link MemoryStoreOptions}. Sync agents take sync stores only (`MemoryStore`, `SQLiteStore`). @default {}
   */
  memory?: MemoryConfig | undefined;
  /**
   * Tools the model may call natively (OpenAI function calling): actions, toolkits, executors or OpenAI
   * function-tool JSON. With tools, the built-in `forward` asks the model through `generate()`, and a reply
   * that calls tools has `formatted: { toolCalls }` (run them with an executor; `FunctionCallingAgent`
   * does the whole loop).
   */
  tools?: readonly ToolSpec[] | undefined;
  /** Parses the model's text into the reply's `formatted` field (and types it). */
  outputFormat?: OutputParser<F> | undefined;
  /** Turns memory into chat messages. @default new DefaultAggregator() */
  aggregator?: DefaultAggregator | undefined;
  /** @default the class name */
  name?: string | undefined;
  description?: string | undefined;
  hooks?: H[] | undefined;
  /**
   * Journals every call of this agent (and of the agents it calls) in a store, a step at a time, so that a
   * call that crashed or stopped for approval goes on where it was (see {@link DurableOptions}).
   */
  durable?: DurableOptions | undefined;
  /**
   * Interceptors around this agent's calls, its model calls and the tool calls made inside them, and those of
   * every agent called inside its calls (see {@link AsyncInterceptor}); outermost first. Also `agent.use()`.
   */
  interceptors?: readonly InterceptorFor<H>[] | undefined;
  /**
   * A record the model keeps for itself — per session, or per `resourceId` (a user) across sessions — shown in
   * its system prompt and changed through the `updateWorkingMemory` tool, which is added to `tools` (an agent
   * without tools is refused: the update is a native tool call). See {@link WorkingMemoryOptions}.
   */
  workingMemory?: WorkingMemoryOptions | undefined;
}

/**
 * Options of `call()`: the session, generation overrides, and anything else for `llm.chat` and sub-calls.
 * `budget` limits what the call, with every call made inside it, may spend (its reply's `extraInfo.usage`
 * says what it spent); `callId` and `durable` are those of durable calls. `askBeforeTools` makes the call
 * stop before every tool call it would run, with an interrupt of kind `'check'` (what a remote client asks
 * of the agent it calls when its own caller has tool guardrails); resumed with approval, the call runs it.
 */
export type CallOptions = {
  sessionId?: SessionId | undefined;
  budget?: Budget | undefined;
  callId?: string | undefined;
  durable?: DurableOptions | undefined;
  askBeforeTools?: boolean | undefined;
  /** Ends the call with a `TimeoutError` when it has not finished within this many ms (see `interceptors/timeout`). */
  timeoutMs?: number | undefined;
  /**
   * Tools the caller runs itself (OpenAI function specs; AG-UI's frontend tools), for this call: offered to every
   * model the call asks with native tools (a function-calling loop's, an agent given `tools`) beside its own. A
   * model's call of one stops the call with an interrupt of kind `'client-tool'` (the rest of its round waits
   * with it); resume with `resumeWith([{ id, approve: true, result }])`, and the model reads `result` as the
   * tool's output. A name that one of the tree's tools has is a `ValidationError`. Give them again on the resume
   * for the model to keep seeing them (a durable call's replay keeps those it was made with). Servers never take
   * them from a request body (their protocol routes set them).
   */
  clientTools?: readonly OpenAITool[] | undefined;
  /**
   * Whom the session belongs to (a user, a tenant): what is remembered with `scope: 'resource'` (semantic
   * recall, working memory) is shared by every session called with the same `resourceId`, and by no other.
   * Servers never take it from a request body unless told to: whoever may set it may read that memory.
   */
  resourceId?: string | undefined;
} & GenParams &
  Record<string, unknown>;
/** What `forward()` receives: the call options with the session always set. */
export type ForwardOptions = CallOptions & { sessionId: SessionId };
/** Options of an async `call()`: also an `AbortSignal`. */
export type AsyncCallOptions = CallOptions & { signal?: AbortSignal | undefined };
/** What an async `forward()` receives. */
export type AsyncForwardOptions = AsyncCallOptions & { sessionId: SessionId };

/**
 * What `forward` returns as the base classes declare it: a message (of any content) or text. Overrides
 * may return anything narrower; `call()` is typed by what the override returns (see {@link ReplyOf}).
 */
export type ForwardResult = AgentMessage<unknown, unknown> | string;

/** What a streaming `forward` may return: the reply, or nothing to use its last chunk. */
// biome-ignore lint/suspicious/noConfusingVoidType: lets a generator that returns nothing type-check
export type StreamReturn = ForwardResult | undefined | void;

/**
 * The message `call()` makes of a forward result `R`: a message as it is, text as a message without
 * `formatted`; each member of a union on its own.
 */
export type ReplyOf<R> = R extends string
  ? AgentMessage<string, null>
  : R extends AgentMessage<unknown, unknown>
    ? R
    : never;

/** True when `A` and `B` are the same type (`any` and `unknown` told apart). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/**
 * The reply of a call whose forward gives `R` (awaited, or what a stream yields and returns): the default
 * forward's (whose declared type is exactly {@link ForwardResult}) is the model's text with `formatted`
 * from the output parser (`F`); an override's is {@link ReplyOf} what it returns.
 */
export type AgentReply<R, F> = Same<R, ForwardResult> extends true ? ParsedReply<F> : ReplyOf<R>;

/**
 * What a streaming call yields for a forward giving `R`: as {@link AgentReply}, but the default forward's
 * chunks are partial text, whose `formatted` is null until the parser can read it.
 */
export type AgentChunk<R, F> = Same<R, ForwardResult> extends true ? AgentMessage<string, F> : ReplyOf<R>;

/**
 * The final reply of an agent with an output parser `F`: the model's text, and `formatted` as the parser
 * read it (never null: a reply the parser cannot read fails the call with a `ParseError`). Without a parser
 * `F` is `unknown`, and so is `formatted`.
 */
export type ParsedReply<F> = AgentMessage<string, F> & { formatted: F };

/**
 * What a streaming forward's call ends with: what the generator returns, or its last chunk when it may return
 * nothing.
 */
export type StreamFinal<G> =
  G extends Generator<infer Y, infer R, infer _N>
    ? undefined extends R
      ? Y | Exclude<R, void>
      : R
    : G extends AsyncGenerator<infer Y, infer R, infer _N>
      ? undefined extends R
        ? Y | Exclude<R, void>
        : R
      : never;

/** What a streaming forward (a sync or async generator) yields and returns, as one type. */
export type StreamOutput<G> =
  G extends Generator<infer Y, infer R, infer _N>
    ? Y | Exclude<R, void>
    : G extends AsyncGenerator<infer Y, infer R, infer _N>
      ? Y | Exclude<R, void>
      : never;

/**
 * Events an agent emits to observers (`agent.events.on('callEnd', ...)`). An agent also reports the events of
 * its descendants that run inside its calls: `path` is the emitting agent's dotted path in this agent's tree
 * (`'writer'`, `'experts.0'`), `''` for its own events.
 */
export interface AgentEvents {
  callStart: [
    event: { agent: AgentBase; sessionId: SessionId; messages: readonly AgentMessage[]; path: string },
  ];
  callEnd: [event: { agent: AgentBase; sessionId: SessionId; message: AgentMessage; path: string }];
  llmStart: [
    event: { agent: AgentBase; sessionId: SessionId; messages: readonly ChatMessage[]; path: string },
  ];
  /**
   * The model answered. `model` names the model that did: the llm's `model`, or for a fallback chain the
   * model of the chain that gave this answer (undefined when the llm has no name).
   */
  llmEnd: [
    event: {
      agent: AgentBase;
      sessionId: SessionId;
      response: string;
      path: string;
      model?: string | undefined;
      /** What the model reasoned before answering, when it reported it. */
      reasoning?: string | undefined;
    },
  ];
  error: [event: { agent: AgentBase; sessionId: SessionId; error: unknown; path: string }];
  /** A function-calling agent is about to run the tool calls its model asked for. */
  toolStart: [
    event: { agent: AgentBase; sessionId: SessionId; toolCalls: readonly ToolCall[]; path: string },
  ];
  /** A function-calling agent's tool calls returned: `message.content[i]` answers `toolCalls[i]`. */
  toolEnd: [
    event: {
      agent: AgentBase;
      sessionId: SessionId;
      toolCalls: readonly ToolCall[];
      message: AgentMessage;
      path: string;
    },
  ];
  /** A call stopped to ask a person (`interrupts`); emitted by the agent that was called. */
  interrupt: [
    event: { agent: AgentBase; sessionId: SessionId; interrupts: readonly Interrupt[]; path: string },
  ];
  /** A call was given a resume message with these decisions. */
  resume: [event: { agent: AgentBase; sessionId: SessionId; decisions: readonly Decision[]; path: string }];
  /**
   * A replayed durable call returned a step from its journal (no model asked, no tool run); emitted by the
   * outermost durable agent. `step.key` is the step's place in the call tree.
   */
  stepReplayed: [
    event: {
      agent: AgentBase;
      sessionId: SessionId;
      callId: string;
      step: { key: string; kind: string; name: string };
      path: string;
    },
  ];
  /**
   * A durable call that a process left unfinished (it died, or was stopped) was recovered, replayed to its end
   * with `message` its reply, before the session's next call went on; emitted by the outermost durable agent.
   */
  callRecovered: [
    event: { agent: AgentBase; sessionId: SessionId; callId: string; message: AgentMessage; path: string },
  ];
  /**
   * Semantic recall placed earlier messages before a model call (`TokenWindowAggregator`'s `recall`):
   * `query` is the text that was embedded, `recalled` the messages shown to the model, most similar first.
   */
  recall: [
    event: {
      agent: AgentBase;
      sessionId: SessionId;
      query: string;
      recalled: readonly RecalledMessage[];
      path: string;
    },
  ];
  /** The model updated its working memory (the `workingMemory` option) with `value`. */
  workingMemory: [
    event: {
      agent: AgentBase;
      sessionId: SessionId;
      scope: 'session' | 'resource';
      resourceId?: string | undefined;
      value: unknown;
      path: string;
    },
  ];
}

/** One message semantic recall placed before a model call (see the `recall` agent event). */
export interface RecalledMessage {
  /** The message as it was sent or received. */
  readonly content: string;
  /** Who wrote it (`user`, an agent's name, a tool's). */
  readonly sender: string;
  /** The session it was said in (another session of the same resource with `scope: 'resource'`). */
  readonly sessionId: SessionId;
  /** Its similarity to the query (cosine, 1 the same); neighbours brought in with `range` carry their match's. */
  readonly score: number;
}

export { EMITTER, LANES };

/** Options of `recover()`. */
export interface RecoverOptions {
  /** @default 0 */
  sessionId?: SessionId | undefined;
  /** The store of the journals. @default the agent's `durable` store */
  store?: SessionStore | undefined;
  /** @default the `durable` option's, or the agent's name */
  namespace?: string | undefined;
}

/** What `recoverAll()` did for one session: the replies of its recovered calls, or why it failed. */
export interface RecoveredSession {
  sessionId: string;
  replies: AgentMessage[];
  /** What failed the session's recovery (its other sessions were still recovered). */
  error?: unknown;
}

/** The final reply of a call's result: the message, a promise of it, or the last chunk of a stream. */
function finalOf(result: unknown): unknown {
  if (result instanceof AgentMessage || isThenable(result)) return result;
  const stream = result as Iterable<unknown> | AsyncIterable<unknown>;
  if (Symbol.asyncIterator in stream) {
    return (async () => {
      let last: unknown;
      for await (const chunk of stream as AsyncIterable<unknown>) last = chunk;
      return last;
    })();
  }
  let last: unknown;
  for (const chunk of stream as Iterable<unknown>) last = chunk;
  return last;
}

/** Options of `reset()`. */
export interface ResetOptions {
  /** Dotted path of the one sub-agent to reset, e.g. `'writer'` or `'experts.0'`. */
  keypath?: string | undefined;
  /** Also reset every sub-agent. */
  recursive?: boolean | undefined;
}

function createMemoryManager(config: MemoryConfig | undefined): MemoryManager | null {
  if (config === null) return null;
  if (config === undefined) return new MemoryManager();
  if (typeof config === 'function') return new MemoryManager(config);
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new ConfigurationError({
      message: 'memory must be { recentN?, maxSessions? }, a () => Memory factory, or null',
    });
  }
  const { recentN, maxSessions } = config;
  const create = recentN === undefined ? () => new Memory() : () => new Memory({ recentN });
  // With a store, the binding drops sessions (from the whole tree) instead.
  if (config.store !== undefined || maxSessions === undefined) return new MemoryManager(create);
  return new MemoryManager(create, { maxSessions });
}

/**
 * What every agent variant shares: configuration, memory, hooks, events and the agent tree
 * (`children`, `stateDict`, `loadStateDict`, `reset`, `toString`). Sub-agents are the own properties
 * whose values are agents, `AgentList`s or `AgentDict`s, in property order.
 */
export abstract class AgentBase<L = unknown, F = unknown, H extends Hook = Hook> implements MemoryNode {
  readonly [AGENT_NODE] = 'agent' as const;
  llm: L | undefined;
  template: SystemInstruction | undefined;
  memory: MemoryManager | null;
  /** Tools offered to the model natively (see {@link AgentOptions.tools}). */
  tools: readonly ToolSpec[] | undefined;
  outputFormat: OutputParser<F> | undefined;
  aggregator: DefaultAggregator;
  name: string;
  description: string | undefined;
  readonly #hooks: HookList;
  #interceptors: readonly Interceptor[];
  [EMITTER]: EventEmitter<AgentEvents> | undefined = undefined;
  /** What the built-in concerns answered for this agent's calls, made at its first call (`interceptors/chain.ts`). */
  [CHAIN]: unknown = undefined;
  readonly [LANES] = new SessionLanes();
  /** The store of `memory: { store }`, and the sessions of it this process holds. */
  [SESSION_BINDING]: SessionBinding | undefined;
  /** The `durable` option: the store of this agent's call journals. */
  [DURABLE]: DurableOptions | undefined;
  /** The `workingMemory` option's record and tool (also set on a function-calling loop's model-facing agent). */
  [WORKING_MEMORY]: WorkingMemory | undefined;

  constructor(options: AgentOptions<L, F, H> = {}) {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new ConfigurationError({
        message: `${new.target.name} expects an options object ({ llm, template, ... })`,
      });
    }
    this.llm = options.llm;
    this.template = options.template;
    this.memory = createMemoryManager(options.memory);
    // A bounded memory never drops a session this agent is answering.
    if (this.memory?.maxSessions !== undefined)
      this.memory[SESSION_IN_USE] = (key) => this[LANES].isBusy(key);
    this.tools = options.tools;
    this.outputFormat = options.outputFormat;
    this.aggregator = options.aggregator ?? new DefaultAggregator();
    this.name = options.name ?? new.target.name;
    this.description = options.description;
    this.#hooks = new HookList(options.hooks);
    this.#interceptors = checkInterceptors(this.name, options.interceptors ?? []);
    const memory = options.memory;
    this[SESSION_BINDING] =
      memory !== null && typeof memory === 'object' && memory.store !== undefined
        ? new SessionBinding(this as AgentBase, memory as MemoryStoreOptions)
        : undefined;
    checkSyncStore(this as AgentBase);
    this[DURABLE] = checkDurable(this.name, options.durable);
    this[WORKING_MEMORY] = undefined;
    if (options.workingMemory !== undefined) {
      if (this.tools === undefined) {
        throw new ConfigurationError({
          message: `${this.name}: working memory is updated through a native tool call, so it needs an agent that offers tools (give it tools, or use a FunctionCallingAgent)`,
        });
      }
      const working = new WorkingMemory(
        this as AgentBase,
        options.workingMemory,
        (this as { [SYNC_AGENT]?: boolean })[SYNC_AGENT] === true,
      );
      this.tools = [...this.tools, working.tool];
      this[WORKING_MEMORY] = working;
    }
  }

  /** The registered hooks, in the order they run. */
  get hooks(): readonly H[] {
    return this.#hooks.items as readonly H[];
  }

  /** This agent's own interceptors, outermost first (the calls it is called in may add theirs outside). */
  get interceptors(): readonly Interceptor[] {
    return this.#interceptors;
  }

  /**
   * Adds interceptors inside the ones this agent has: they apply to its calls from the next one on, and to the
   * calls of every agent called inside them. Returns the agent.
   *
   * @example
   * agent.use({ name: 'log', async toolCall(ctx, next) { console.log(ctx.toolCall.name); return next(); } });
   */
  use(...interceptors: Interceptor[]): this {
    const added = checkInterceptors(this.name, interceptors);
    // A new list: calls in flight keep the one they began with.
    this.#interceptors = [...this.#interceptors, ...added];
    return this;
  }

  /** Typed events for observers; created on first access. */
  get events(): EventEmitter<AgentEvents> {
    if (this[EMITTER] === undefined) {
      this[EMITTER] = new EventEmitter<AgentEvents>();
      observers.add(this);
    }
    return this[EMITTER];
  }

  /** Adds a hook after the existing ones. */
  registerHook(hook: H): RemovableHandle {
    return this.#hooks.add(hook);
  }

  /** `[name, subAgent]` pairs: own properties holding agents or containers, in property order. */
  children(): [string, AgentNode][] {
    return discoverChildren(this);
  }

  /** Every agent in the tree with its dotted path prefix (`''` for this one), depth first. */
  *namedAgents(prefix = ''): Generator<[string, MemoryNode]> {
    const seen = new Set<AgentNode>();
    const stack: [string, AgentNode][] = [[prefix, this]];
    while (stack.length > 0) {
      const [path, node] = stack.pop()!;
      if (seen.has(node)) continue;
      seen.add(node);
      if (node[AGENT_NODE] === 'agent') yield [path, node as MemoryNode];
      const children = node.children();
      for (let i = children.length - 1; i >= 0; i--) {
        const [key, child] = children[i]!;
        stack.push([`${path}${key}.`, child]);
      }
    }
  }

  /**
   * Every memory in the tree for one session, keyed `memory`, `writer.memory`, `list.0.memory`, ...;
   * `{ format: 'lagent' }` writes Python Lagent's snake_case shape, which its `load_state_dict` continues from.
   */
  stateDict(
    sessionId: SessionId | undefined,
    options: StateDictOptions & { format: 'lagent' },
  ): LagentStateDict;
  stateDict(sessionId?: SessionId, options?: StateDictOptions & { format?: 'lagent-ts' }): StateDict;
  stateDict(sessionId?: SessionId, options?: StateDictOptions): StateDict | LagentStateDict;
  stateDict(sessionId: SessionId = 0, options: StateDictOptions = {}): StateDict | LagentStateDict {
    return saveStateDict(this, sessionId, options);
  }

  /**
   * Restores every memory in the tree for one session, from either shape (camelCase, or Python Lagent's
   * snake_case). Missing keys and malformed entries throw a {@link StateDictError} before anything
   * changes; unknown keys are reported as a process warning.
   */
  loadStateDict(dict: StateDict | LagentStateDict, sessionId: SessionId = 0): void {
    loadStateDict(this, dict, sessionId);
  }

  /**
   * Replays the session's unfinished durable calls (a process that ran them died), oldest first, from the
   * journals in the `durable` store (or `options.store`): steps already recorded return their results, the
   * rest runs live. Returns their replies (a promise of them for async agents). Each call is recovered under
   * its session's lease: a call still running elsewhere is waited for, and one that finished meanwhile (or was
   * recovered by another process) is not run again: its recorded reply is returned, marked
   * `extraInfo.idempotentReplay: true`; calls that failed or wait for a person are left as they are.
   */
  recover(options: RecoverOptions = {}): AgentMessage[] | Promise<AgentMessage[]> {
    const durable = this.#durableFor(options, 'recover');
    const sessionId = options.sessionId ?? 0;
    const replies: AgentMessage[] = [];
    const call = (callId: string): unknown => {
      try {
        const reply = finalOf(
          (this as unknown as { call(input: undefined, options: object): unknown }).call(undefined, {
            sessionId,
            callId,
            durable,
            [RECOVERING]: true,
          }),
        );
        if (!isThenable(reply)) return replies.push(reply as AgentMessage);
        return Promise.resolve(reply).then(
          (value) => replies.push(value as AgentMessage),
          (error: unknown) => {
            if (!(error instanceof CallNotRecovered)) throw error;
          },
        );
      } catch (error) {
        if (!(error instanceof CallNotRecovered)) throw error;
        return undefined;
      }
    };
    const replay = (callIds: string[]): AgentMessage[] | Promise<AgentMessage[]> => {
      for (let i = 0; i < callIds.length; i++) {
        const done = call(callIds[i]!);
        if (isThenable(done)) return Promise.resolve(done).then(() => replay(callIds.slice(i + 1)));
      }
      return replies;
    };
    const ids = durable.store.listJournals(durable.namespace!, String(sessionId), { unfinished: true });
    return isThenable(ids) ? Promise.resolve(ids).then(replay) : replay(ids);
  }

  /**
   * The interrupts a session waits for (tool calls asking for approval), with the ids its interrupt reply
   * gave: read from the session's memories and, for a durable agent, its journal, without calling anything.
   * See {@link pendingInterrupts}. A promise of them for async agents.
   */
  pendingInterrupts(sessionId: SessionId = 0): Interrupt[] | Promise<Interrupt[]> {
    return pendingInterrupts(this, sessionId);
  }

  /**
   * Recovers every unfinished durable call of the `durable` store's namespace (or `options.store`'s), session
   * by session, as {@link recover} does for one: what a process does when it starts (`lagent serve` does it).
   * A session whose recovery fails is reported with its error; the others are still recovered. The store must
   * list unfinished calls (`listUnfinishedCalls`: the stores of lagent-ts do).
   */
  recoverAll(
    options: Omit<RecoverOptions, 'sessionId'> = {},
  ): RecoveredSession[] | Promise<RecoveredSession[]> {
    const durable = this.#durableFor(options, 'recoverAll');
    const { store } = durable;
    const namespace = durable.namespace!;
    if (typeof store.listUnfinishedCalls !== 'function') {
      throw new ConfigurationError({
        message: `${this.name}.recoverAll: ${store.description} cannot list a namespace's unfinished calls; recover each session with recover({ sessionId })`,
      });
    }
    const sessions = new Set<string>();
    const results: RecoveredSession[] = [];
    const recoverEach = (i: number): RecoveredSession[] | Promise<RecoveredSession[]> => {
      const ids = [...sessions];
      for (; i < ids.length; i++) {
        const sessionId = ids[i]!;
        let replies: AgentMessage[] | Promise<AgentMessage[]>;
        try {
          replies = this.recover({ sessionId, store, namespace });
        } catch (error) {
          results.push({ sessionId, replies: [], error });
          continue;
        }
        if (isThenable(replies)) {
          const next = i + 1;
          return Promise.resolve(replies).then(
            (value) => {
              results.push({ sessionId, replies: value });
              return recoverEach(next);
            },
            (error: unknown) => {
              results.push({ sessionId, replies: [], error });
              return recoverEach(next);
            },
          );
        }
        results.push({ sessionId, replies });
      }
      return results;
    };
    const list = (after: string | undefined): RecoveredSession[] | Promise<RecoveredSession[]> => {
      const page = store.listUnfinishedCalls!(namespace, { after, limit: 500 });
      const read = (value: Awaited<typeof page>) => {
        for (const { sessionId } of value.calls) sessions.add(sessionId);
        return value.next === undefined ? recoverEach(0) : list(value.next);
      };
      return isThenable(page) ? Promise.resolve(page).then(read) : read(page);
    };
    return list(undefined);
  }

  /** The `durable` option `recover` and `recoverAll` work with (the store given, or the agent's). */
  #durableFor(options: { store?: SessionStore | undefined; namespace?: string | undefined }, method: string) {
    const own = this[DURABLE];
    const durable: DurableOptions | undefined =
      options.store === undefined
        ? own
        : {
            ...(own?.store === options.store ? own : {}),
            store: options.store,
            namespace: options.namespace,
          };
    if (durable === undefined) {
      throw new ConfigurationError({
        message: `${this.name}.${method} needs a store: give the agent durable: { store }, or ${method}({ store })`,
      });
    }
    return { ...durable, namespace: options.namespace ?? durable.namespace ?? this.name };
  }

  /**
   * Clears this agent's memory of a session (and the token usage its model counted for it); `recursive`
   * clears every sub-agent's too, and `keypath` clears exactly one sub-agent's, or every agent of a
   * container (`AgentList` / `AgentDict`) when it names one.
   */
  reset(sessionId: SessionId = 0, options: ResetOptions = {}): void {
    const { keypath, recursive = false } = options;
    if (keypath && recursive) {
      throw new ConfigurationError({ message: 'reset: keypath and recursive cannot be used together' });
    }
    if (keypath) {
      let node: AgentNode = this;
      for (const key of keypath.split('.')) {
        const child = node.children().find(([name]) => name === key)?.[1];
        if (!child)
          throw new ConfigurationError({ message: `reset: no sub-agent "${key}" in keypath "${keypath}"` });
        node = child;
      }
      if (node instanceof AgentBase) node.reset(sessionId);
      else for (const member of containedAgents(node)) member.reset(sessionId);
      return;
    }
    this.memory?.reset(sessionId);
    forgetRecalled(this, sessionId);
    sessionRecordsOf(this)?.reset(sessionId);
    forgetUsage(this.llm, sessionId);
    if (recursive) {
      for (const [path, agent] of this.namedAgents()) {
        if (path === '') continue;
        agent.memory?.reset(sessionId);
        forgetRecalled(agent as AgentBase, sessionId);
        sessionRecordsOf(agent)?.reset(sessionId);
        forgetUsage((agent as AgentBase).llm, sessionId);
      }
    }
  }

  /**
   * Deletes a session everywhere the agent tree keeps it: from the session store of `memory: { store }` (with
   * its call journals and its session-scope working memory), from every agent's memory, and from every agent's
   * semantic recall store (its vectors, whatever the recall's scope: a deleted session is never recalled in
   * another). Use it rather than `store.deleteSession`, which knows nothing of the vectors. A session with a call
   * in flight is refused (its turn would be committed or indexed again). Resolves to true when the store had the
   * session (without a store, when an agent's memory had it).
   */
  async deleteSession(sessionId: SessionId = 0): Promise<boolean> {
    const key = sessionKey(sessionId);
    if (this[LANES].isBusy(key)) {
      throw new ConfigurationError({
        message: `${this.name}.deleteSession: session ${JSON.stringify(String(sessionId))} has a call in flight; delete it once the call ended`,
      });
    }
    const binding = this[SESSION_BINDING];
    let existed = false;
    if (binding !== undefined) {
      try {
        existed = await binding.store.deleteSession(binding.namespace, String(key));
      } catch (error) {
        throw asStoreError(binding.store, 'deleteSession', String(sessionId), error);
      }
      binding.forget(key);
    }
    for (const [, node] of this.namedAgents()) {
      const agent = node as AgentBase;
      if (binding === undefined && agent.memory?.get(sessionId) !== undefined) existed = true;
      agent.memory?.reset(sessionId);
      sessionRecordsOf(agent)?.reset(sessionId);
      forgetUsage(agent.llm, sessionId);
      const recall = (agent.aggregator as { [RECALL_INDEX]?: Recall } | undefined)?.[RECALL_INDEX];
      if (recall !== undefined) await recall.deleteSession(String(key));
    }
    return existed;
  }

  /** A PyTorch-style tree of this agent and its sub-agents. */
  toString(): string {
    return renderTree(`${this.constructor.name}(name='${this.name}')`, this.children());
  }

  /** For `console.log` / `util.inspect`. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }
}

export type { StateDict } from './state-dict';

/** The agents of a container, through nested containers (not the sub-agents of those agents). */
function containedAgents(node: AgentNode): AgentBase[] {
  const found: AgentBase[] = [];
  for (const [, child] of node.children()) {
    if (child instanceof AgentBase) found.push(child);
    else found.push(...containedAgents(child));
  }
  return found;
}

/** Frees what a model keeps per session (its token usage), when it keeps anything. */
/** A reset session's vectors go from its agent's semantic recall store. */
function forgetRecalled(agent: AgentBase, sessionId: SessionId): void {
  (agent.aggregator as { [FORGET_RECALLED]?: (id: SessionId, name: string) => void } | undefined)?.[
    FORGET_RECALLED
  ]?.(sessionId, agent.name);
}

function forgetUsage(llm: unknown, sessionId: SessionId): void {
  const reset = (llm as { resetUsage?: unknown } | null | undefined)?.resetUsage;
  if (typeof reset === 'function') (reset as (id: SessionId) => void).call(llm, sessionId);
}

/** Checks a list of interceptors given to an agent; returns a frozen copy. */
function checkInterceptors(owner: string, interceptors: readonly unknown[]): readonly Interceptor[] {
  if (!Array.isArray(interceptors)) {
    throw new ConfigurationError({ message: `${owner}: interceptors must be an array of interceptors` });
  }
  for (const interceptor of interceptors) checkInterceptor(owner, interceptor);
  return Object.freeze([...interceptors]) as readonly Interceptor[];
}
