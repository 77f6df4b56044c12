import type { z } from 'zod';
import type { ActionReturn } from '../schema/action-return';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import type { SessionId } from '../schema/session';
import type { ToolCallsFormatted, ToolResultsMessage } from '../schema/tool-calls';

/** Lagent's parameter types, derived from the zod schema. */
export type ActionParameterType = 'STRING' | 'NUMBER' | 'FLOAT' | 'BOOLEAN' | 'Array' | 'Object';

/** One parameter in Lagent's description shape. */
export interface ActionParameter {
  name: string;
  type: ActionParameterType;
  description: string;
}

/** One API in Lagent's description shape (a simple tool's own description, or an entry of `api_list`). */
export interface ApiDescription {
  name: string;
  description: string;
  parameters: ActionParameter[];
  required: string[];
  /** How to pass arguments, shown to the model (Lagent's JSON-argument sentence). */
  parameter_description?: string | undefined;
}

/**
 * A tool's description in Lagent's shape: a simple tool has `parameters` and `required`; a toolkit has
 * `api_list` with one entry per API (names without the toolkit prefix).
 */
export interface ActionDescription {
  name: string;
  description: string;
  parameters?: ActionParameter[] | undefined;
  required?: string[] | undefined;
  parameter_description?: string | undefined;
  api_list?: ApiDescription[] | undefined;
}

/** An OpenAI function tool (`tools` of the Chat Completions API). */
export type { OpenAITool } from '../schema/chat-message';

/** What a tool's `run` receives besides its arguments. */
export interface ToolContext {
  /** The session the call belongs to, e.g. to keep one interpreter per session. @default 0 */
  sessionId: SessionId;
  /** Aborted when the caller cancels or the call's timeout passes (async executors and actions only). */
  signal?: AbortSignal | undefined;
}

/** How one API of a class-based action is declared: the method of the same name runs it. */
export interface ToolApiSpec<S extends z.ZodObject = z.ZodObject> {
  /** What the API does, for the model. */
  description?: string | undefined;
  /** The arguments, as a zod object; unknown keys are rejected unless the object is `z.looseObject`. */
  parameters?: S | undefined;
  /**
   * Maps a plain-text argument (one that is not JSON) to arguments, for APIs that take free text; without
   * it such text is an `ARGS_ERROR`.
   */
  fromText?: (text: string) => Record<string, unknown>;
  /**
   * Whether a call must be approved by a person before it runs: the agent's call then stops and returns an
   * interrupt (see `interruptsOf`, `resumeWith`). A function decides per call from the checked arguments.
   * @default false
   */
  needsApproval?: ApprovalRule<z.output<S>> | undefined;
  /**
   * Whether running a call twice is harmless. A durable call that crashed while this tool ran runs it again
   * when true; otherwise the model is told the outcome is unknown. @default false
   */
  retrySafe?: boolean | undefined;
}

/** When a tool call needs a person's approval: always, never, or as a function of the call decides. */
export type ApprovalRule<A = Record<string, unknown>> =
  | boolean
  | ((args: A, context: ToolContext) => boolean | Promise<boolean>);

/** One API of an action: its declaration plus the function that runs it. */
export interface ActionApi<S extends z.ZodObject = z.ZodObject, R = unknown> extends ToolApiSpec<S> {
  run(args: z.output<S>, context: ToolContext): R;
}

/** Call options of an action or executor. */
export interface ActionCallOptions {
  /** @default 0 */
  sessionId?: SessionId | undefined;
}

/** Call options of an async action or executor: also a cancellation signal and a per-call timeout. */
export interface AsyncActionCallOptions extends ActionCallOptions {
  /** Cancels the call: the returned promise rejects with the signal's reason, and the tool sees `context.signal`. */
  signal?: AbortSignal | undefined;
  /** After this many ms an async tool's result is no longer awaited: the call returns an `API_ERROR`. */
  timeoutMs?: number | undefined;
}

/** What an `afterAction` hook of type `H` gives back when it replaces the reply (`never` when it only watches). */
type AfterActionReply<H> = H extends { afterAction(...args: never[]): infer R }
  ? Extract<Awaited<R>, AgentMessage<unknown, unknown>>
  : never;

/** `unknown` for `any`, so that a hook typed loosely makes the reply open rather than untyped. */
type Open<T> = 0 extends 1 & T ? unknown : T;

/**
 * What a message given to an executor asks for, read from the type of its `formatted` field: `'calls'` for
 * native tool calls (`{ toolCalls }`), `'text'` for a call in the content, both when the type leaves it
 * open (`unknown`, `{ toolCalls } | null` as any `AgentMessage<C, { toolCalls }>` has). Only a message whose
 * `formatted` is surely the calls (narrowed by `hasToolCalls`, a `ToolCallsMessage`) gets the results type
 * alone. A plain `AgentMessage` (`formatted: unknown`) may hold either, and so may the reply; a message
 * typed `any` counts as a text call.
 */
type CallKind<M> = M extends string
  ? 'text'
  : M extends { formatted: infer F }
    ? FormattedKind<F>
    : M extends { formatted?: infer F }
      ? 'formatted' extends keyof M
        ? FormattedKind<F | undefined>
        : 'text'
      : 'text';

type FormattedKind<F> = 0 extends 1 & F ? 'text' : unknown extends F ? 'text' | 'calls' : KindOf<F>;

type KindOf<F> = F extends ToolCallsFormatted ? 'calls' : 'text';

/**
 * An executor's reply when its hooks are `H` and its input is `M`: from `'ActionExecutor'`, with the
 * {@link ActionReturn} as content and no `formatted` for a call in the content; for native tool calls the
 * `ActionReturn`s, one per call in order, with the calls as `formatted` (see `ToolResultsMessage`). An
 * `afterAction` hook that replaces the message may also give what it returns (`ActionPreprocessor`'s text:
 * `unknown`, as it declares no more).
 */
export type ExecutorReply<H, M = MessageInput> =
  | ('text' extends CallKind<M>
      ? AgentMessage<
          ActionReturn | Open<ContentOf<AfterActionReply<H>>>,
          null | Open<FormattedOf<AfterActionReply<H>>>
        >
      : never)
  | ('calls' extends CallKind<M>
      ? [AfterActionReply<H>] extends [never]
        ? ToolResultsMessage
        : AgentMessage<
            ActionReturn[] | Open<ContentOf<AfterActionReply<H>>>,
            ToolCallsFormatted | Open<FormattedOf<AfterActionReply<H>>>
          >
      : never);

type ContentOf<M> = M extends AgentMessage<infer C, infer _F> ? C : never;
type FormattedOf<M> = M extends AgentMessage<infer _C, infer F> ? F : never;
