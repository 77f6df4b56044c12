import { AgentMessage } from '../schema/agent-message';
import { GuardrailTripped } from '../schema/errors';
import { isThenable } from '../utils/is';
import { thrownText } from '../utils/text';

/*
 * Guardrails as the call lifecycle sees them (`guardrail()` in hooks/ builds them). A check that returns a
 * reason (a non-empty string) trips its guardrail: the call fails with `GuardrailTripped` and is taken back.
 * Input checks run before `forward` (in parallel mode, while it runs: a trip aborts the call's signal, so the
 * model stops answering); output checks see the reply, and a streaming call's chunks as they come; tool checks
 * run before every tool call made inside the call, sub-agents' included.
 */

/** Where a guardrail looks. */
export type GuardrailStage = 'input' | 'output' | 'tool';

/** What a guardrail's check returns: nothing to pass, a reason to trip (or a promise of either). */
// biome-ignore lint/suspicious/noConfusingVoidType: `void` lets checks that return nothing type-check
export type GuardrailVerdict = string | undefined | null | void;

/** A guardrail, as the lifecycle runs it. */
export interface GuardSpec {
  readonly name: string;
  readonly on: GuardrailStage;
  readonly parallel: boolean;
  check(message: unknown, context: unknown): GuardrailVerdict | PromiseLike<GuardrailVerdict>;
}

/** Where a hook made by `guardrail()` keeps its spec. */
export const GUARDRAIL: unique symbol = Symbol('lagent-ts.guardrail');

/** The guardrail a hook is, if it is one. */
export function guardOf(hook: unknown): GuardSpec | undefined {
  return (hook as { [GUARDRAIL]?: GuardSpec } | null | undefined)?.[GUARDRAIL];
}

/** The error of a tripped guardrail. */
export function trippedBy(guard: GuardSpec, reason: string): GuardrailTripped {
  return new GuardrailTripped({
    message: `guardrail ${guard.name} tripped on the ${guard.on}: ${reason}`,
    guardrail: guard.name,
    reason,
  });
}

/**
 * Runs a check: throws when it tripped at once, returns a promise (rejected with `GuardrailTripped` when it
 * trips) for a check that answers later, else undefined. A check that throws trips with what it threw.
 */
export function runCheck(guard: GuardSpec, message: unknown, context: unknown): Promise<void> | undefined {
  let verdict: unknown;
  try {
    verdict = guard.check(message, context);
  } catch (error) {
    throw trippedBy(guard, `its check failed: ${thrownText(error, 'it')}`);
  }
  if (isThenable(verdict)) {
    return Promise.resolve(verdict).then(
      (value) => judge(guard, value),
      (error: unknown) => {
        throw trippedBy(guard, `its check failed: ${thrownText(error, 'it')}`);
      },
    );
  }
  judge(guard, verdict);
  return undefined;
}

function judge(guard: GuardSpec, verdict: unknown): void {
  if (typeof verdict === 'string' && verdict !== '') throw trippedBy(guard, verdict);
}

/** The message a tool guardrail checks for one call: `formatted` is `{ name, arguments }`. */
export function toolCallMessage(
  sender: string,
  toolCall: { name: string; arguments: unknown },
): AgentMessage {
  return new AgentMessage({ sender, content: JSON.stringify(toolCall), formatted: toolCall });
}
