import {
  GUARDRAIL,
  type GuardrailStage,
  type GuardrailVerdict,
  type GuardSpec,
  runCheck,
  toolCallMessage,
} from '../core/guards';
import type { AgentMessage } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { toolCallsOf } from '../schema/tool-calls';
import type { HookAgent, HookExecutor } from './hook';

export type { GuardrailStage, GuardrailVerdict } from '../core/guards';

/** What a guardrail's check is told besides the message. */
export interface GuardrailContext {
  /** The agent (or executor) whose call is checked. */
  readonly name: string;
  readonly sessionId: SessionId;
  readonly on: GuardrailStage;
  /** For `on: 'tool'`: the call about to run. */
  readonly toolCall?: { readonly name: string; readonly arguments: unknown } | undefined;
}

/** Options of {@link guardrail}. */
export interface GuardrailOptions {
  /** Names the guardrail in `GuardrailTripped`. */
  name: string;
  /**
   * What it checks: each input message of the call (`'input'`), the reply and, in streaming agents, each
   * chunk as it comes (`'output'`), or each tool call made inside the call, by the agent's loops and its
   * sub-agents' (`'tool'`: the message's `formatted` is `{ name, arguments }`).
   */
  on: GuardrailStage;
  /**
   * Returns a reason (a non-empty string) to trip, nothing to pass; may be async. A check that throws trips
   * too (a guardrail fails closed).
   */
  check: (
    message: AgentMessage,
    context: GuardrailContext,
  ) => GuardrailVerdict | PromiseLike<GuardrailVerdict>;
  /**
   * Input checks only: run while the call goes on rather than before it (the model is not kept waiting); a
   * trip aborts the call through its signal, so a model that is still answering stops. The call succeeds only
   * once every check has passed. Output checks of a streaming agent always run this way.
   * @default false
   */
  parallel?: boolean | undefined;
}

/**
 * A guardrail: a hook to pass in an agent's `hooks` (see {@link guardrail}). Its methods are typed as returning
 * nothing so that it fits sync and async agents alike; with an async check they return a promise, which only
 * async agents and executors can wait for.
 */
export interface Guardrail {
  readonly hookName: string;
  readonly [GUARDRAIL]: GuardSpec;
  beforeAgent?(agent: HookAgent, messages: AgentMessage[], sessionId: SessionId): undefined;
  afterAgent?(agent: HookAgent, message: AgentMessage, sessionId: SessionId): undefined;
  beforeAction?(executor: HookExecutor, message: AgentMessage, sessionId: SessionId): undefined;
}

/**
 * A guardrail, as a hook for an agent's `hooks` (a `'tool'` guardrail also works in an executor's). When its
 * check returns a reason, the call fails with `GuardrailTripped` (`guardrail`, `reason`) and is taken back
 * like any failure. Sync agents take guardrails whose checks answer synchronously.
 *
 * @example
 * const noSecrets = guardrail({
 *   name: 'no-secrets',
 *   on: 'output',
 *   check: (message) => (/sk-[A-Za-z0-9]{20}/.test(String(message.content)) ? 'the reply holds a key' : undefined),
 * });
 * const agent = new AsyncAgent({ llm, hooks: [noSecrets] });
 */
export function guardrail(options: GuardrailOptions): Guardrail {
  const { name, on, check } = options ?? ({} as GuardrailOptions);
  if (typeof name !== 'string' || name === '') {
    throw new ConfigurationError({ message: 'guardrail: name must be a non-empty string' });
  }
  if (on !== 'input' && on !== 'output' && on !== 'tool') {
    throw new ConfigurationError({
      message: `guardrail ${name}: on must be 'input', 'output' or 'tool', got ${JSON.stringify(on)}`,
    });
  }
  if (typeof check !== 'function') {
    throw new ConfigurationError({ message: `guardrail ${name}: check must be a function` });
  }
  const parallel = options.parallel === true;
  if (parallel && on !== 'input') {
    throw new ConfigurationError({
      message: `guardrail ${name}: parallel applies to input guardrails (output checks of streams always run alongside)`,
    });
  }
  const spec: GuardSpec = { name, on, parallel, check: check as GuardSpec['check'] };
  // The methods may return a promise (an async check): see Guardrail.
  const hook = { hookName: name, [GUARDRAIL]: spec } as {
    hookName: string;
    [GUARDRAIL]: GuardSpec;
    beforeAgent?: (
      agent: HookAgent,
      messages: AgentMessage[],
      sessionId: SessionId,
    ) => Promise<undefined> | undefined;
    afterAgent?: (
      agent: HookAgent,
      message: AgentMessage,
      sessionId: SessionId,
    ) => Promise<undefined> | undefined;
    beforeAction?: (
      executor: HookExecutor,
      message: AgentMessage,
      sessionId: SessionId,
    ) => Promise<undefined> | undefined;
  };
  const context = (who: string, sessionId: SessionId, toolCall?: GuardrailContext['toolCall']) =>
    toolCall === undefined ? { name: who, sessionId, on } : { name: who, sessionId, on, toolCall };
  if (on === 'input' && !parallel) {
    hook.beforeAgent = (agent, messages, sessionId) =>
      all(messages.map((message) => runCheck(spec, message, context(agent.name, sessionId))));
  } else if (on === 'output') {
    hook.afterAgent = (agent, message, sessionId) =>
      all([runCheck(spec, message, context(agent.name, sessionId))]);
  } else if (on === 'tool') {
    hook.beforeAction = (executor, message, sessionId) => {
      const calls = toolCallsOf(message.formatted);
      if (calls === null) return all([runCheck(spec, message, context(executor.name, sessionId))]);
      return all(
        calls.map((call) => {
          const toolCall = { name: call.name, arguments: call.arguments };
          return runCheck(
            spec,
            toolCallMessage(executor.name, toolCall),
            context(executor.name, sessionId, toolCall),
          );
        }),
      );
    };
  }
  return hook as Guardrail;
}

/** Undefined when every check answered at once; else a promise of their verdicts, passing as undefined. */
function all(pending: (Promise<void> | undefined)[]): Promise<undefined> | undefined {
  const waiting = pending.filter((item) => item !== undefined);
  if (waiting.length === 0) return undefined;
  return Promise.all(waiting).then(() => undefined);
}
