import { runChain } from '../../core/interceptors';
import type { PendingTurn } from '../../core/session-lanes';
import { PromiseInSyncCall, type Steps } from '../../core/steps';
import type { AgentMessage, MessageInput } from '../../schema/agent-message';
import { ConfigurationError } from '../../schema/errors';
import { InterruptSignal } from '../../schema/interrupts';
import type { SessionKey } from '../../schema/session';
import type { AgentBase } from '../agent-base';
import { SYNC_AGENT } from '../interceptors/session-store/persist';
import { needsDriving, Turn } from './turn';

/**
 * `call()`, written once for all four variants:
 *
 * 1. wait for the session's earlier calls on this agent (one call per session at a time, in call order);
 * 2. the inputs become copies (a resume message gives decisions instead);
 * 3. the call's interceptors, outermost first (the concerns that apply to it — see agents/interceptors/chain.ts
 *    — then users'), around the call itself:
 * 4. the inputs to memory -> `forward`, inside the call's frame when it needs one (calls made in it inherit its
 *    signal and report their turns) -> the reply to memory, and a copy of it returned.
 *
 * If anything fails (or a stream is abandoned), the call takes back exactly its own messages and every
 * turn its sub-calls stored; nothing else in any memory moves. A question for a person (an `InterruptSignal`)
 * passing through a call made inside another is not a failure: the call keeps what it did.
 */
export function* agentCallSteps(
  agent: AgentBase,
  input: MessageInput | readonly MessageInput[] | undefined,
  options: Record<string, unknown> | undefined,
): Steps<AgentMessage> {
  const turn = new Turn(agent, options);
  const pending = turn.acquire();
  if (pending !== undefined) yield* waitForLane(agent, pending, turn.sessionKey);
  try {
    turn.inputsOf(input);
    turn.link();
  } catch (error) {
    turn.fail(error);
    turn.close();
    throw error;
  }
  // The steps of `linkedSteps`, written out here: every call runs them, and each generator nested in another
  // costs a call an object and each of its steps a hop (a function-calling turn makes three calls).
  try {
    const links = turn.agentLinks;
    let reply: AgentMessage;
    if (links.length === 0) {
      // `callItself`, written out too.
      const messages = turn.messages;
      turn.remember(messages);
      let output = turn.forward(messages);
      if (needsDriving(output)) output = yield output;
      reply = turn.reply(output);
    } else reply = yield* runChain(links, 0, turn, (context) => callItself(turn, context), modeOf(agent));
    turn.finished = true;
    return reply;
  } catch (error) {
    throw failed(turn, error);
  } finally {
    turn.close();
  }
}

/**
 * A call's steps once its inputs and hooks are known (as {@link agentCallSteps} runs them; `callAsync` starts
 * here for a call with hooks).
 */
export function* linkedSteps(turn: Turn): Steps<AgentMessage> {
  try {
    const links = turn.agentLinks;
    const reply =
      links.length === 0
        ? yield* callItself(turn, turn)
        : yield* runChain(links, 0, turn, (context) => callItself(turn, context), modeOf(turn.agent));
    turn.finished = true;
    return reply;
  } catch (error) {
    throw failed(turn, error);
  } finally {
    turn.close();
  }
}

/**
 * A call's end by `error`, which is returned to be thrown again: a question for a person passing through keeps
 * what the call did (the outermost call answers it); anything else fails the call.
 */
function failed(turn: Turn, error: unknown): unknown {
  if (error instanceof InterruptSignal && turn.parent !== undefined) turn.finished = true;
  else turn.fail(error);
  return error;
}

/** The call itself, at the end of its chain: memory, `forward`, the reply. */
function* callItself(turn: Turn, context: { messages: AgentMessage[] }): Steps<AgentMessage> {
  const messages = context.messages;
  turn.messages = messages;
  turn.remember(messages);
  let output = turn.forward(messages);
  if (needsDriving(output)) output = yield output;
  return turn.reply(output);
}

/** How plain-function hooks of an agent's calls get `next`'s result: sync agents' directly. */
function modeOf(agent: AgentBase): 'sync' | 'async' {
  return (agent as unknown as Record<symbol, unknown>)[SYNC_AGENT] === true ? 'sync' : 'async';
}

/** Waits for the session's earlier calls; a sync driver cannot wait, so the call is refused. */
function* waitForLane(agent: AgentBase, pending: PendingTurn, sessionKey: SessionKey): Steps<void> {
  try {
    yield pending.ready;
  } catch (error) {
    if (!(error instanceof PromiseInSyncCall)) throw error;
    pending.cancel();
    throw new ConfigurationError({
      message: `${agent.name}: session ${JSON.stringify(String(sessionKey))} has a call in progress (an unfinished stream?); a synchronous agent cannot wait for it: finish that stream or call its return() first`,
    });
  }
}
