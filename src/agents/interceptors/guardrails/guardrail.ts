import { currentFrame } from '../../../core/call-context';
import type { HookAgent, HookExecutor } from '../../../hooks/hook';
import type { AgentMessage } from '../../../schema/agent-message';
import { ConfigurationError } from '../../../schema/errors';
import type { SessionId } from '../../../schema/session';
import { toolCallsOf } from '../../../schema/tool-calls';
import {
  CheckContext,
  checkEach,
  DEFAULT_CHECK_TIMEOUT_MS,
  GUARDRAIL,
  type GuardrailStage,
  type GuardrailVerdict,
  type GuardSpec,
  runCheck,
  toolCallMessage,
} from './guards';

export type { GuardrailStage, GuardrailVerdict } from './guards';

/** What a guardrail's check is told besides the message. */
export interface GuardrailContext {
  /** The agent (or executor) whose call is checked. */
  readonly name: string;
  readonly sessionId: SessionId;
  readonly on: GuardrailStage;
  /** For `on: 'tool'`: the call about to run. */
  readonly toolCall?: { readonly name: string; readonly arguments: unknown } | undefined;
  /**
   * Aborted when the call is (its caller's signal, or another guardrail that tripped), or when the check ran
   * past its `timeoutMs`: pass it to the requests a check makes, so they stop when nobody waits for them.
   */
  readonly signal: AbortSignal;
}

/** Options of {@link guardrail}. */
export interface GuardrailOptions {
  /** Names the guardrail in `GuardrailTripped`. */
  name: string;
  /**
   * What it checks: each input message of the call (`'input'`), the reply and, in streaming agents, each
   * chunk before it is delivered (`'output'`: a chunk reaches the caller once its checks passed; checks of
   * later chunks run meanwhile), or each tool call made inside the call, by the agent's loops and its
   * sub-agents', remote ones included (`'tool'`: the message's `formatted` is `{ name, arguments }`).
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
   * trip aborts the call through its signal, so a model that is still answering stops. Nothing of the call
   * reaches the caller before every check passed: the reply waits, a streaming agent holds its chunks back
   * (and delivers them once the checks passed), and a tool call made inside the call waits to start.
   * @default false
   */
  parallel?: boolean | undefined;
  /**
   * Milliseconds a check may take: one that has not answered by then trips the guardrail (it fails closed),
   * with a reason saying it timed out, and its `context.signal` aborts. `Infinity` for no limit.
   * @default 30_000
   */
  timeoutMs?: number | undefined;
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
  const timeoutMs = options.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0)) {
    throw new ConfigurationError({
      message: `guardrail ${name}: timeoutMs must be a positive number of milliseconds (Infinity for no limit), got ${String(timeoutMs)}`,
    });
  }
  const spec: GuardSpec = { name, on, parallel, timeoutMs, check: check as GuardSpec['check'] };
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
  // An agent runs its guardrails itself, with its call's signal; these methods serve executors (and code that
  // calls hooks by hand), whose checks get the signal of the agent call they run in.
  const context = (who: string, sessionId: SessionId, toolCall?: GuardrailContext['toolCall']) =>
    new CheckContext(who, sessionId, on, currentFrame()?.signal, toolCall);
  if (on === 'input' && !parallel) {
    hook.beforeAgent = (agent, messages, sessionId) =>
      passed(checkEach(messages, (message) => runCheck(spec, message, context(agent.name, sessionId))));
  } else if (on === 'output') {
    hook.afterAgent = (agent, message, sessionId) =>
      passed(runCheck(spec, message, context(agent.name, sessionId)));
  } else if (on === 'tool') {
    hook.beforeAction = (executor, message, sessionId) => {
      const calls = toolCallsOf(message.formatted);
      if (calls === null) return passed(runCheck(spec, message, context(executor.name, sessionId)));
      return passed(
        checkEach(calls, (call) => {
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
function passed(pending: Promise<void> | undefined): Promise<undefined> | undefined {
  return pending === undefined ? undefined : pending.then(() => undefined);
}
