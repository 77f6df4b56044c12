import type { Slot } from '../../core/interceptors';
import type { Steps } from '../../core/steps';
import type { AsyncHook, SyncHook } from '../../hooks/hook';
import type { LLMCallParams, ModelReply } from '../../llms/types';
import type { ActionReturn } from '../../schema/action-return';
import type { AgentMessage } from '../../schema/agent-message';
import type { ChatMessage } from '../../schema/chat-message';
import type { Decision } from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import type { AgentBase, CallOptions } from '../agent-base';

/*
 * The public shape of interceptors (see core/interceptors.ts for how a chain runs): the three contexts and the
 * three ways to write an interceptor (for async agents, for sync agents, or as steps for every variant).
 */

/** What every hook's context has: who is called, on which session, and the slots of the call. */
export interface CallContext {
  /** The agent whose call this is (for a tool call: the agent whose call the tool call is made in). */
  readonly agent: AgentBase;
  readonly sessionId: SessionId;
  /** The call's signal: aborted when the caller aborts, a concern stops the call, or it fails. */
  readonly signal: AbortSignal | undefined;
  /** This call's value of a slot (an interceptor's own state: make a key with `slot()`). */
  get<T>(key: Slot<T>): T | undefined;
  set<T>(key: Slot<T>, value: T | undefined): void;
  /** The nearest value of a slot: this call's, else that of the calls it is made in. */
  find<T>(key: Slot<T>): T | undefined;
}

/** The context of an agent call (`agentCall` hooks). */
export interface AgentCallContext extends CallContext {
  /** The call's inputs; change them (or pass a context with others to `next`) to change what the call gets. */
  messages: AgentMessage[];
  /** The decisions of a resume message the call was given (a resume message is not one of `messages`). */
  readonly decisions: readonly Decision[] | undefined;
  /** The call options as given (`sessionId`, `budget`, generation parameters, ...). */
  readonly given: Readonly<CallOptions>;
  /** The agent's dotted path in the tree of the outermost call (`''` for that agent). */
  readonly path: string;
}

/** The context of a model call made by an agent's built-in forward (`modelCall` hooks). */
export interface ModelCallContext extends CallContext {
  /** The agent call the model call is made in. */
  readonly call: AgentCallContext;
  /** The model client asked. */
  readonly llm: unknown;
  /** The prompt; change it (or pass a context with another) to change what the model gets. */
  messages: ChatMessage[];
  /** The request's parameters: the call options, `tools` when the agent offers tools, and what concerns add. */
  params: LLMCallParams;
  /** True when the reply streams: `next()` then gives the whole reply once the stream has ended. */
  readonly streamed: boolean;
}

/** The context of a tool call made inside an agent call (`toolCall` hooks). */
export interface ToolCallContext extends CallContext {
  /** The agent call the tool call is made in. */
  readonly call: AgentCallContext;
  /** The tool as the model names it (`Name`, or `Name.api`) and its arguments (change them before `next()`). */
  readonly toolCall: { name: string; arguments: unknown };
  /** Whether the tool may run twice (`retrySafe`). */
  readonly retrySafe: boolean;
  /** Runs `callback` once the arguments were checked, just before the tool runs (it may return a promise). */
  onRun(callback: () => unknown): void;
}

/**
 * An interceptor for async agents: each hook gets its context and `next`, which runs the rest of the chain and
 * resolves to its result (the reply, the model's reply, the tool's result). A hook may call `next` once, not at
 * all (it answers itself), or with a changed context. Added with `agent.use()` or the `interceptors` option, it
 * applies to the agent and every agent called inside its calls.
 *
 * @example
 * const costLogger: AsyncInterceptor = {
 *   name: 'cost-logger',
 *   async modelCall(ctx, next) {
 *     const reply = await next();
 *     console.log(ctx.agent.name, reply.usage);
 *     return reply;
 *   },
 * };
 * agent.use(costLogger);
 */
export interface AsyncInterceptor {
  readonly name: string;
  /** Not written as steps (see {@link StepsInterceptor}). */
  readonly steps?: false | undefined;
  agentCall?(
    context: AgentCallContext,
    next: (context?: AgentCallContext) => Promise<AgentMessage>,
  ): AgentMessage | Promise<AgentMessage>;
  modelCall?(
    context: ModelCallContext,
    next: (context?: ModelCallContext) => Promise<ModelReply>,
  ): ModelReply | Promise<ModelReply>;
  toolCall?(
    context: ToolCallContext,
    next: (context?: ToolCallContext) => Promise<ActionReturn>,
  ): ActionReturn | Promise<ActionReturn>;
}

/** An interceptor for sync agents: as {@link AsyncInterceptor}, but `next()` returns the result itself. */
export interface SyncInterceptor {
  readonly name: string;
  /** Not written as steps (see {@link StepsInterceptor}). */
  readonly steps?: false | undefined;
  agentCall?(context: AgentCallContext, next: (context?: AgentCallContext) => AgentMessage): AgentMessage;
  modelCall?(context: ModelCallContext, next: (context?: ModelCallContext) => ModelReply): ModelReply;
  toolCall?(context: ToolCallContext, next: (context?: ToolCallContext) => ActionReturn): ActionReturn;
}

/**
 * An interceptor written as steps (generator functions, `yield* next()`): it serves every variant, sync and
 * async, streaming included (the built-in concerns are written so). A promise or stream it meets is yielded to
 * the call's driver: `const value = yield promise` awaits in an async call (a sync call refuses it).
 *
 * @example
 * const counter: StepsInterceptor = {
 *   name: 'counter',
 *   steps: true,
 *   *toolCall(ctx, next) {
 *     calls++;
 *     return yield* next();
 *   },
 * };
 */
export interface StepsInterceptor {
  readonly name: string;
  /** Its hooks are generator functions (what tells TypeScript which `next` a hook is given). */
  readonly steps: true;
  agentCall?(
    context: AgentCallContext,
    next: (context?: AgentCallContext) => Steps<AgentMessage>,
  ): Steps<AgentMessage>;
  modelCall?(
    context: ModelCallContext,
    next: (context?: ModelCallContext) => Steps<ModelReply>,
  ): Steps<ModelReply>;
  toolCall?(
    context: ToolCallContext,
    next: (context?: ToolCallContext) => Steps<ActionReturn>,
  ): Steps<ActionReturn>;
}

/** Any interceptor (see {@link AsyncInterceptor}, {@link SyncInterceptor}, {@link StepsInterceptor}). */
export type Interceptor = AsyncInterceptor | SyncInterceptor | StepsInterceptor;

/**
 * The interceptors an agent whose hooks are `H` takes: a sync agent's plain hooks get results from `next()`, an
 * async agent's promises; steps serve both. (One kind of plain hook per agent, so that an interceptor written
 * inline gets its parameters' types.)
 */
export type InterceptorFor<H> = [H] extends [SyncHook]
  ? [AsyncHook] extends [H]
    ? Interceptor // `Hook` itself: either kind
    : SyncInterceptor | StepsInterceptor
  : [AsyncHook] extends [H]
    ? AsyncInterceptor | StepsInterceptor
    : Interceptor;
