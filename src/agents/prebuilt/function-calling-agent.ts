import { ActionExecutor } from '../../actions/action-executor';
import { AsyncActionExecutor } from '../../actions/async-action-executor';
import type { ActionBase, BaseAction } from '../../actions/base-action';
import type { ExecutorBase } from '../../actions/executor-base';
import { CALL_STEPS } from '../../actions/executor-steps';
import { PLANNED } from '../../core/approval-rules';
import { currentFrame } from '../../core/call-context';
import { driveAsync, driveSync, type Steps } from '../../core/steps';
import { driveStream, driveStreamAsync } from '../../core/stream-drivers';
import type { AsyncHook, Hook, SyncHook } from '../../hooks/hook';
import type { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import type { ActionReturn } from '../../schema/action-return';
import { AgentMessage, type MessageInState } from '../../schema/agent-message';
import type { ToolCall } from '../../schema/chat-message';
import { ConfigurationError, ValidationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { AgentStatusCode } from '../../schema/status';
import { toolCallsOf } from '../../schema/tool-calls';
import { Agent } from '../agent';
import type {
  AgentBase,
  AgentOptions,
  AsyncForwardOptions,
  ForwardOptions,
  MemoryConfig,
} from '../agent-base';
import type { AgentClass } from '../agent-class';
import type { DefaultAggregator, SystemInstruction } from '../aggregator/default-aggregator';
import { AsyncAgent } from '../async-agent';
import { AsyncStreamingAgent } from '../async-streaming-agent';
import {
  type GatedLoop,
  mergeRound,
  pendingCallsOf,
  planRound,
  type RoundKind,
} from '../interceptors/approvals/rounds';
import { resumesFromMemory } from '../interceptors/durable/in-process';
import type { DurableOptions } from '../interceptors/durable/journal';
import { SYNC_AGENT } from '../interceptors/session-store/persist';
import { RESUME } from '../interceptors/slots';
import type { InterceptorFor } from '../interceptors/types';
import { WorkingMemory, type WorkingMemoryOptions } from '../interceptors/working-memory/record';
import { WORKING_MEMORY } from '../interceptors/working-memory/symbol';
import { agentCallSteps, emitEvent } from '../lifecycle';
import { TOOL_TURNS, WAITING_CALLS, type WaitingCalls } from '../pending-interrupts';
import { StreamingAgent } from '../streaming-agent';
import { checkMaxTurn, type MaxTurnInfo, subCall } from './loop-turns';
import { markedChunk } from './stream-states';
import { stoppedUnanswered } from './text-approval';

/** Options of the function-calling agents; `L` is the kind of model, `H` the kind of hooks. */
export interface FunctionCallingAgentOptions<L, H, A extends ActionBase = ActionBase> {
  /** A model that supports native tool calls (`GPTAPI` / `AsyncGPTAPI`, or a mock scripting them). */
  llm: L;
  /** The tools, offered to the model as OpenAI functions (toolkit APIs as `Name__api`). */
  actions: A | readonly A[];
  /** The system instruction. */
  template?: SystemInstruction | undefined;
  /** Model turns per call; the reply says so when the model still wanted tools after the last. @default 10 */
  maxTurn?: number | undefined;
  /** @default the class name */
  name?: string | undefined;
  description?: string | undefined;
  /** Hooks of this agent (around the whole loop). */
  hooks?: H[] | undefined;
  /** Interceptors of this agent (see `AsyncInterceptor`): they apply to its calls and every call made inside. */
  interceptors?: readonly InterceptorFor<H>[] | undefined;
  /** Memory of the model-facing sub-agent, which keeps the tool turns. @default {} */
  memory?: MemoryConfig | undefined;
  /**
   * How the sub-agent's memory becomes the prompt: a `TokenWindowAggregator` keeps a tool-heavy session's
   * prompt within its window (a tool call and its results are kept or dropped together).
   * @default new DefaultAggregator()
   */
  aggregator?: DefaultAggregator | undefined;
  /** Per tool call, in ms (async variants). */
  timeoutMs?: number | undefined;
  /** Journals each call's model and tool steps in a store, so a crashed call goes on where it was. */
  durable?: DurableOptions | undefined;
  /**
   * A record the model keeps for itself, per session or per `resourceId`, shown in its system prompt and
   * changed with the `updateWorkingMemory` tool (added to the executor's tools): see `WorkingMemoryOptions`.
   */
  workingMemory?: WorkingMemoryOptions | undefined;
}

/**
 * The final reply of a function-calling agent: the model's answer as text (or, at `maxTurn`, the sentence
 * saying it stopped, with `extraInfo`), `formatted` null, `streamState` `END`.
 */
export type FunctionCallingReply = MessageInState<typeof AgentStatusCode.END, string, null>;

/**
 * What a streaming function-calling agent yields: the model's text (`STREAM_ING`) and the final reply
 * (`END`); the model's call of tools (`PLUGIN_END`, `formatted.toolCalls`); their results (`PLUGIN_RETURN`,
 * `content[i]` answering `formatted.toolCalls[i]`). Checking `streamState` narrows `content` and `formatted`.
 */
export type FunctionCallingChunk =
  | MessageInState<typeof AgentStatusCode.STREAM_ING, string, null>
  | FunctionCallingReply
  | MessageInState<typeof AgentStatusCode.PLUGIN_END, string, { toolCalls: ToolCall[] }>
  | MessageInState<typeof AgentStatusCode.PLUGIN_RETURN, ActionReturn[], { toolCalls: ToolCall[] }>;

/** What the loop needs of its owner. */
interface Loop {
  readonly name: string;
  readonly maxTurn: number;
  readonly agent: { call(input: AgentMessage | AgentMessage[], options: { sessionId: SessionId }): unknown };
  readonly executor: { call(message: AgentMessage, options: { sessionId: SessionId }): unknown };
}

/**
 * The stock `call` of the sub-agent class and of the executor class of a variant whose driver is of the
 * loop's own kind (sync or async): such a `call` only drives its steps, so the loop runs those steps itself
 * under its driver. That is the same code under the same kind of driver, without a driver, a promise and
 * a microtask hop per sub-call. Any other `call` (a subclass's, a replaced sub-agent's) is called.
 */
interface DirectCalls {
  readonly agent: unknown;
  readonly executor: unknown;
}

const SYNC_CALLS: DirectCalls = { agent: Agent.prototype.call, executor: ActionExecutor.prototype.call };
const ASYNC_CALLS: DirectCalls = {
  agent: AsyncAgent.prototype.call,
  executor: AsyncActionExecutor.prototype.call,
};

/**
 * The function-calling loop, written once for the four variants: the model-facing sub-agent answers (with
 * the tools offered natively); while its reply calls tools, the executor runs them (the async one in
 * parallel) and its results go back to the model. The tool turns are in the sub-agent's memory. Each round
 * of tools is reported as `toolStart` / `toolEnd` events; with `streaming`, also as chunks (see
 * {@link AsyncStreamingFunctionCallingAgent}).
 */
function* functionCallingSteps(
  loop: Loop,
  messages: AgentMessage[],
  sessionId: SessionId,
  direct?: DirectCalls,
  streaming = false,
): Steps<AgentMessage> {
  let input: AgentMessage | AgentMessage[] = messages;
  // Whether a model turn wrote text: the next one starts a new paragraph for a consumer printing deltas.
  const state = { wroteText: false };
  const owner = loop as unknown as AgentBase;
  const pending = pendingCallsOf(loop as unknown as GatedLoop, sessionId);
  const frame = currentFrame();
  const resuming = frame?.find(RESUME) !== undefined;
  if (pending !== undefined) {
    // The session waits for decisions on these calls: given them, the round runs; given another message,
    // the calls that needed approval are declined and the loop goes on with that message.
    const results = yield* toolRound(
      loop,
      pending,
      sessionId,
      direct,
      streaming,
      state,
      resuming ? 'resumed' : 'superseded',
    );
    if (results !== undefined) input = messages.length === 0 ? results : [results, ...messages];
  } else if (frame?.owner === owner && frame.get(RESUME) !== undefined && messages.length === 0) {
    throw new ValidationError({
      message: `${loop.name}: session ${JSON.stringify(String(sessionId))} has no call waiting for a decision`,
      field: 'decisions',
    });
  }
  for (let turn = 1; ; turn++) {
    const agent = loop.agent;
    const reply: AgentMessage =
      direct !== undefined && agent.call === direct.agent
        ? yield* agentCallSteps(agent as unknown as AgentBase, input, { sessionId })
        : yield* subCall(agent.call(input, { sessionId }));
    const calls = toolCallsOf(reply.formatted);
    if (calls === null) return reply;
    if (turn >= loop.maxTurn) return stoppedReply(loop, calls);
    if (typeof reply.content === 'string' && reply.content !== '') state.wroteText = true;
    input = (yield* toolRound(loop, reply, sessionId, direct, streaming, state, 'live'))!;
  }
}

/**
 * One round of tool calls: checked for approval (see `approval.ts`), run by the executor, reported as
 * events (and chunks when streaming). A round `superseded` by a new message has its calls that need approval
 * declined; when none does, it is left as it is (undefined).
 */
function* toolRound(
  loop: Loop,
  reply: AgentMessage,
  sessionId: SessionId,
  direct: DirectCalls | undefined,
  streaming: boolean,
  state: { wroteText: boolean },
  round: RoundKind,
): Steps<AgentMessage | undefined> {
  const owner = loop as unknown as AgentBase;
  const executor = loop.executor;
  const plan = yield* planRound(owner, executor as unknown as ExecutorBase<never>, reply, sessionId, round);
  if (plan.run && round === 'superseded') return undefined;
  const calls = plan.run ? toolCallsOf(reply.formatted)! : plan.calls;
  emitEvent(owner, 'toolStart', { agent: owner, sessionId, toolCalls: calls, path: '' });
  if (streaming) yield markedChunk(reply, AgentStatusCode.PLUGIN_END, '');
  const message = plan.run ? reply : plan.message;
  let results: AgentMessage | undefined;
  if (message !== undefined) {
    // Asked about already: the executor runs it as it is.
    const options = { sessionId, [PLANNED]: true };
    results =
      direct !== undefined && executor.call === direct.executor
        ? yield* (executor as unknown as DirectExecutor)[CALL_STEPS](message, options)
        : yield* subCall(executor.call(message, options));
  }
  if (!plan.run)
    results = mergeRound(plan, (executor as { name?: string }).name ?? 'ActionExecutor', results);
  emitEvent(owner, 'toolEnd', { agent: owner, sessionId, toolCalls: calls, message: results!, path: '' });
  if (streaming)
    yield markedChunk(results!, AgentStatusCode.PLUGIN_RETURN, state.wroteText ? TURN_BREAK : '');
  return results;
}

/** The `delta` that ends a model turn's text before the next turn's, for a consumer printing deltas. */
const TURN_BREAK = '\n\n';

interface DirectExecutor {
  [CALL_STEPS](message: AgentMessage, options: { sessionId: SessionId }): Steps<AgentMessage>;
}

/**
 * The reply when the model still asked for tools after `maxTurn` turns. Those calls are not run: the
 * history shows them as not run, and the next call of the session starts from there.
 */
function stoppedReply(loop: Loop, calls: readonly ToolCall[]): AgentMessage<string, null> {
  const info: MaxTurnInfo = { maxTurnReached: true, maxTurn: loop.maxTurn };
  const names = [...new Set(calls.map((call) => call.name))].join(', ');
  return new AgentMessage({
    sender: loop.name,
    content: `${loop.name} stopped after ${loop.maxTurn} model turn${loop.maxTurn === 1 ? '' : 's'} (maxTurn) without a final answer; the model still asked for: ${names}.`,
    formatted: null,
    extraInfo: info,
  });
}

/** What every function-calling agent variant has; `I` is the model-facing sub-agent's class, `E` the executor's. */
export interface FunctionCallingAgentFields<I, E> {
  /** The most model turns per call. */
  readonly maxTurn: number;
  /** The model-facing sub-agent; its memory keeps the tool turns. */
  agent: I;
  /** Runs the tool calls. */
  executor: E;
}

/** What differs between the function-calling variants: the sub-agent's class and the executor's. */
interface FunctionCallingVariant<I, E> {
  agent(options: AgentOptions<unknown, unknown, Hook>): I;
  executor(options: FunctionCallingAgentOptions<unknown, Hook, ActionBase>): E;
}

/** The function-calling agents' shared fields and constructor over a variant's base class (see {@link AgentClass}). */
function functionCallingAgentClass<
  A extends AgentBase,
  I extends AgentBase,
  E extends ExecutorBase<ActionBase>,
  O,
>(Base: AgentClass<A>, variant: FunctionCallingVariant<I, E>) {
  abstract class FunctionCallingBase extends (Base as AgentClass<AgentBase>) {
    readonly maxTurn: number;
    agent: I;
    executor: E;

    constructor(options: FunctionCallingAgentOptions<unknown, Hook, ActionBase>) {
      if (options === null || typeof options !== 'object' || !('actions' in options)) {
        throw new ConfigurationError({ message: `${new.target.name} expects { llm, actions, ... }` });
      }
      super({
        name: options.name,
        description: options.description,
        hooks: options.hooks,
        interceptors: options.interceptors,
        memory: options.memory,
        durable: options.durable,
      });
      this.maxTurn = checkMaxTurn(this.name, options.maxTurn ?? 10);
      // The working memory's record is this agent's; its tool runs in the executor, its prompt is the model-facing agent's.
      const working =
        options.workingMemory === undefined
          ? undefined
          : new WorkingMemory(
              this as AgentBase,
              options.workingMemory,
              (this as { [SYNC_AGENT]?: boolean })[SYNC_AGENT] === true,
            );
      this.executor = variant.executor(
        working === undefined
          ? options
          : { ...options, actions: [...toActionList(options.actions), working.tool] },
      );
      this.agent = variant.agent({
        llm: options.llm,
        template: options.template,
        memory: options.memory,
        aggregator: options.aggregator,
        name: this.name,
        tools: [this.executor],
      });
      if (working !== undefined) {
        this[WORKING_MEMORY] = working;
        this.agent[WORKING_MEMORY] = working;
      }
    }

    /** The calls of the model's last message when the loop never answered them (see `pendingInterrupts`). */
    [WAITING_CALLS](sessionId: SessionId): WaitingCalls | undefined {
      const message = pendingCallsOf(this as unknown as GatedLoop, sessionId);
      // A loop that stopped at maxTurn leaves its last calls there too, but waits for nothing.
      if (message === undefined || !stoppedUnanswered(this, sessionId, 0)) return undefined;
      return { calls: toolCallsOf(message.formatted)!, executor: this.executor };
    }

    get [TOOL_TURNS](): AgentBase {
      return this.agent;
    }
  }
  return FunctionCallingBase as unknown as AgentClass<A & FunctionCallingAgentFields<I, E>> & {
    new (options: O): A & FunctionCallingAgentFields<I, E>;
  };
}

/**
 * An agent that uses the model's native function calling: it offers `actions` as tools, runs the calls
 * the model makes and sends the results back, until the model answers without tools (or `maxTurn`). The
 * reply is the model's answer; the tool turns are in the `agent` sub-agent's memory (`agent.memory` in
 * `stateDict`), rendered back to the model as OpenAI tool messages.
 *
 * @example
 * const agent = new FunctionCallingAgent({ llm: new GPTAPI({ model: 'gpt-4o-mini' }), actions: [weather, calculator] });
 * agent.call('What is the weather in Paris?').content;
 */
export class FunctionCallingAgent extends functionCallingAgentClass<
  Agent,
  Agent,
  ActionExecutor,
  FunctionCallingAgentOptions<BaseLLM, SyncHook, BaseAction>
>(Agent, {
  agent: (options) => new Agent(options as AgentOptions<BaseLLM, unknown, SyncHook>),
  executor: (options) => new ActionExecutor({ actions: options.actions as BaseAction[] }),
}) {
  override forward(messages: AgentMessage[], options: ForwardOptions): FunctionCallingReply {
    return driveSync(
      functionCallingSteps(this, messages, options.sessionId, SYNC_CALLS),
    ) as FunctionCallingReply;
  }
}

/** {@link FunctionCallingAgent} for async models: tool calls of one turn run in parallel; abort stops them. */
export class AsyncFunctionCallingAgent extends functionCallingAgentClass<
  AsyncAgent,
  AsyncAgent,
  AsyncActionExecutor,
  FunctionCallingAgentOptions<AsyncBaseLLM, AsyncHook>
>(AsyncAgent, {
  agent: (options) => new AsyncAgent(options as AgentOptions<AsyncBaseLLM, unknown, AsyncHook>),
  executor: asyncExecutorOf,
}) {
  override forward(messages: AgentMessage[], options: AsyncForwardOptions): Promise<FunctionCallingReply> {
    return driveAsync(
      functionCallingSteps(this, messages, options.sessionId, ASYNC_CALLS),
    ) as Promise<FunctionCallingReply>;
  }
}

/**
 * {@link FunctionCallingAgent} that streams: see {@link AsyncStreamingFunctionCallingAgent} for the chunks.
 */
export class StreamingFunctionCallingAgent extends functionCallingAgentClass<
  StreamingAgent,
  StreamingAgent,
  ActionExecutor,
  FunctionCallingAgentOptions<BaseLLM, SyncHook, BaseAction>
>(StreamingAgent, {
  agent: (options) => new StreamingAgent(options as AgentOptions<BaseLLM, unknown, SyncHook>),
  executor: (options) => new ActionExecutor({ actions: options.actions as BaseAction[] }),
}) {
  override forward(
    messages: AgentMessage[],
    options: ForwardOptions,
  ): Generator<FunctionCallingChunk, FunctionCallingReply, undefined> {
    return driveStream(
      functionCallingSteps(this, messages, options.sessionId, undefined, true),
      this.name,
      false,
    ) as Generator<FunctionCallingChunk, FunctionCallingReply, undefined>;
  }
}

/**
 * {@link AsyncFunctionCallingAgent} that streams. The chunks of one call:
 *
 * - the model's text as it arrives: `STREAM_ING` chunks with the turn's text so far as `content`, and what
 *   each adds as `delta`;
 * - when the model asks for tools, a `PLUGIN_END` chunk: a copy of its reply, the calls in
 *   `formatted.toolCalls` (`delta` is `''`);
 * - when they returned, a `PLUGIN_RETURN` chunk: the executor's reply, `content[i]` (an `ActionReturn`)
 *   answering `formatted.toolCalls[i]`; its `delta` is `'\n\n'` when a model turn wrote
 *   text before, so the deltas, printed one after another, show each model turn as its own paragraph;
 * - then the next model turn's text, and at last the final reply once (`END`).
 *
 * The same states as the tool chunks of `AsyncStreamingAgentForInternLM`. The `toolStart` / `toolEnd` events
 * (every function-calling variant has them) report the same rounds to observers.
 *
 * @example
 * for await (const chunk of agent.call('Weather in Paris?')) {
 *   if (chunk.streamState === AgentStatusCode.PLUGIN_END) console.log('\ncalling', toolCallsOf(chunk.formatted));
 *   else process.stdout.write(chunk.delta ?? '');
 * }
 */
export class AsyncStreamingFunctionCallingAgent extends functionCallingAgentClass<
  AsyncStreamingAgent,
  AsyncStreamingAgent,
  AsyncActionExecutor,
  FunctionCallingAgentOptions<AsyncBaseLLM, AsyncHook>
>(AsyncStreamingAgent, {
  agent: (options) => new AsyncStreamingAgent(options as AgentOptions<AsyncBaseLLM, unknown, AsyncHook>),
  executor: asyncExecutorOf,
}) {
  override forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions,
  ): AsyncGenerator<FunctionCallingChunk, FunctionCallingReply, undefined> {
    return driveStreamAsync(
      functionCallingSteps(this, messages, options.sessionId, undefined, true),
      this.name,
      false,
    ) as AsyncGenerator<FunctionCallingChunk, FunctionCallingReply, undefined>;
  }
}

function toActionList(actions: ActionBase | readonly ActionBase[]): ActionBase[] {
  return Array.isArray(actions) ? [...(actions as readonly ActionBase[])] : [actions as ActionBase];
}

function asyncExecutorOf(
  options: FunctionCallingAgentOptions<unknown, Hook, ActionBase>,
): AsyncActionExecutor {
  return new AsyncActionExecutor({ actions: options.actions, timeoutMs: options.timeoutMs });
}

// The loops keep a paused round in memory and resume from it: their calls need no journal to resume.
resumesFromMemory(FunctionCallingAgent.prototype.forward);
resumesFromMemory(AsyncFunctionCallingAgent.prototype.forward);
resumesFromMemory(StreamingFunctionCallingAgent.prototype.forward);
resumesFromMemory(AsyncStreamingFunctionCallingAgent.prototype.forward);
