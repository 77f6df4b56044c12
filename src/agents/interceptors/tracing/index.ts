import { wrapToolCallsOutside } from '../../../actions/action-steps';
import { isQuiet } from '../../../core/quiet';
import type { Steps } from '../../../core/steps';
import type { ModelReply } from '../../../llms/types';
import { modelName } from '../../../llms/wrapped-usage';
import type { ActionReturn } from '../../../schema/action-return';
import type { AgentMessage } from '../../../schema/agent-message';
import { INTERRUPT_TYPE, InterruptSignal } from '../../../schema/interrupts';
import type { SessionId } from '../../../schema/session';
import { ActionStatusCode } from '../../../schema/status';
import type { AgentEvents } from '../../agent-base';
import { abandoned } from '../../lifecycle/call-marks';
import { emitEvent } from '../../lifecycle/events';
import type { Turn } from '../../lifecycle/turn';
import { AGENT, MODEL, PER_CALL, TOOL } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import type { ModelContext } from '../model-context';
import { SPAN } from '../slots';
import type { ToolCallContext } from '../tool-context';
import { observed } from './observed';
import { activeTracer, endSpan, type Span, startAgentSpan, startChatSpan, startToolSpan } from './spans';

export { observed, SPAN };

/*
 * Tracing and events. With a tracer provider registered with `@opentelemetry/api`, a call is an `invoke_agent`
 * span (kept in the call's slot: the parent of the spans made inside it), each model call of a built-in forward
 * a `chat` span and each tool call an `execute_tool` span. With listeners (the agent's own, or an agent that
 * holds it in its tree), a call emits `callStart`, then `callEnd` or `error` (also for a stream its consumer
 * left before the end), and each model call `llmStart` and `llmEnd`. A call that stopped to ask a person emits
 * neither `callEnd` nor `error` (the approvals concern emits `interrupt`).
 */

/** What a call ended with, while it runs: nothing yet (a stream left before its end ends it so). */
const RUNNING = Symbol('running');

const interceptor = {
  name: 'tracing',

  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const { agent } = turn;
    const sessionId = turn.options.sessionId;
    const tracer = activeTracer();
    const span =
      tracer === undefined
        ? undefined
        : startAgentSpan(tracer, agent.name, sessionId, turn.parent?.find(SPAN));
    if (span !== undefined) turn.set(SPAN, span);
    const watched = observed(agent);
    if (watched) emitEvent(agent, 'callStart', { agent, sessionId, messages: turn.messages, path: '' });
    let ended: unknown = RUNNING;
    try {
      const reply = yield* next();
      ended = undefined;
      if (watched && reply.type !== INTERRUPT_TYPE)
        emitEvent(agent, 'callEnd', { agent, sessionId, message: reply, path: '' });
      return reply;
    } catch (error) {
      // A question for a person is not a failure; nor is a recovery that was not needed.
      ended = error instanceof InterruptSignal || isQuiet(error) ? undefined : error;
      if (watched && ended !== undefined) emitEvent(agent, 'error', { agent, sessionId, error, path: '' });
      throw error;
    } finally {
      if (ended === RUNNING) {
        // A stream its caller stopped reading (a closed connection, a Stop) ends the call too: listeners hear it.
        ended = turn.failure ?? abandoned();
        if (watched) emitEvent(agent, 'error', { agent, sessionId, error: ended, path: '' });
      }
      if (span !== undefined) endSpan(span, ended);
    }
  },

  *modelCall(context: ModelContext, next: () => Steps<ModelReply>): Steps<ModelReply> {
    const { agent } = context;
    const sessionId = context.sessionId;
    const watched = observed(agent);
    if (watched) emitEvent(agent, 'llmStart', { agent, sessionId, messages: context.messages, path: '' });
    const tracer = activeTracer();
    const model = (context.llm as { model?: unknown } | undefined)?.model;
    const span =
      tracer === undefined
        ? undefined
        : startChatSpan(tracer, typeof model === 'string' ? model : undefined, context.call.find(SPAN));
    let reply: ModelReply;
    try {
      reply = yield* next();
    } catch (error) {
      if (span !== undefined) endSpan(span, error);
      throw error;
    }
    if (span !== undefined) endChatSpan(span, reply, context.llm);
    if (watched) {
      const event: AgentEvents['llmEnd'][0] = {
        agent,
        sessionId,
        response: reply.content,
        path: '',
        model: answeringModel(context.llm, sessionId),
      };
      if (typeof reply.reasoning === 'string' && reply.reasoning !== '') event.reasoning = reply.reasoning;
      emitEvent(agent, 'llmEnd', event);
    }
    return reply;
  },

  *toolCall(context: ToolCallContext, next: () => Steps<ActionReturn>): Steps<ActionReturn> {
    return yield* traced(context.toolCall.name, context.call.find(SPAN), next);
  },
};

/**
 * The name of the model that gave a session's latest answer: for a fallback chain the one of its models that
 * did (a session's calls run one at a time, so it is this answer's), else the llm's own `model`.
 */
function answeringModel(llm: unknown, sessionId: SessionId): string | undefined {
  const chain = llm as { lastModelOf?: (sessionId: SessionId) => { name: string } | undefined } | undefined;
  if (typeof chain?.lastModelOf === 'function') return chain.lastModelOf(sessionId)?.name;
  return modelName(llm);
}

/** A tool call as an `execute_tool` span (a result other than success marks it failed), with a tracer. */
function* traced(
  name: string,
  parent: Span | undefined,
  next: () => Steps<ActionReturn>,
): Steps<ActionReturn> {
  const tracer = activeTracer();
  if (tracer === undefined) return yield* next();
  const span = startToolSpan(tracer, name, undefined, parent);
  let result: ActionReturn;
  try {
    result = yield* next();
  } catch (error) {
    endSpan(span, error);
    throw error;
  }
  endSpan(
    span,
    result.state === ActionStatusCode.SUCCESS
      ? undefined
      : new Error(result.errmsg ?? `state ${result.state}`),
  );
  return result;
}

// A tool called outside any agent call is traced too (its span's parent is the active one).
wrapToolCallsOutside((name, call) => traced(name, undefined, call));

/**
 * Ends a `chat` span: the token usage the model reported (cached prompt and reasoning tokens too, when
 * reported) and the reasoning of its answer (`lagent.reasoning`).
 */
function endChatSpan(span: Span, reply: ModelReply, llm: unknown): void {
  try {
    // A streamed reply's usage is the model client's last (what it reported for the stream).
    const usage =
      reply.usage ?? (llm as { getLastUsage?(): ModelReply['usage'] } | undefined)?.getLastUsage?.();
    if (usage) {
      span.setAttribute('gen_ai.usage.input_tokens', usage.promptTokens);
      span.setAttribute('gen_ai.usage.output_tokens', usage.completionTokens);
      if (usage.cachedPromptTokens !== undefined)
        span.setAttribute('gen_ai.usage.cache_read.input_tokens', usage.cachedPromptTokens);
      if (usage.cacheWriteTokens !== undefined)
        span.setAttribute('gen_ai.usage.cache_creation.input_tokens', usage.cacheWriteTokens);
      if (usage.reasoningTokens !== undefined)
        span.setAttribute('gen_ai.usage.reasoning.output_tokens', usage.reasoningTokens);
    }
    if (typeof reply.reasoning === 'string' && reply.reasoning !== '')
      span.setAttribute('lagent.reasoning', reply.reasoning);
  } catch {
    // usage is optional
  }
  endSpan(span);
}

export const tracing: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  // A tracer is the process's (registered with `@opentelemetry/api` at any time), as are observers of all agents.
  static: () => PER_CALL,
  perCall(turn) {
    const tracer = activeTracer() !== undefined;
    return (tracer || observed(turn.agent) ? AGENT | MODEL : 0) | (tracer ? TOOL : 0);
  },
};
