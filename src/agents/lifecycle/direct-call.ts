import { driveAsync } from '../../core/steps';
import type { AgentMessage, MessageInput } from '../../schema/agent-message';
import { isThenable } from '../../utils/is';
import type { AgentBase } from '../agent-base';
import { type Forwarding, plainForwardOf } from './builtin-forward';
import { agentCallSteps, linkedSteps } from './call-steps';
import { Turn } from './turn';

/**
 * Whether calls may take the direct run. Internal: `npm run bench` turns it off to measure what the direct
 * run saves (PERFORMANCE.md).
 */
export const DIRECT_RUN = { enabled: true };

/**
 * `AsyncAgent.call`: {@link agentCallSteps} driven by `driveAsync`, except when the call is just the call
 * itself — the built-in forward and no interceptor applies to it (a call on a busy session first waits for its
 * place in line) — where the same steps run directly and the model's promise is followed with one `then`: a
 * call in flight then holds its {@link Turn} and that reaction, not a suspended generator and its driver.
 * 10,000 concurrent sessions keep that much less alive.
 */
export function callAsync(
  agent: AgentBase,
  input: MessageInput | readonly MessageInput[] | undefined,
  options: Record<string, unknown> | undefined,
): Promise<AgentMessage> {
  const parts = plainForwardOf((agent as unknown as Forwarding).forward);
  if (parts === undefined || parts === null || !DIRECT_RUN.enabled) {
    return driveAsync(agentCallSteps(agent, input, options));
  }
  let turn: Turn;
  try {
    turn = new Turn(agent, options);
  } catch (error) {
    return Promise.reject(error);
  }
  const pending = turn.acquire();
  // A busy session: the run waits for its place in line (an abort while waiting rejects, touching nothing).
  if (pending !== undefined) return pending.ready.then(() => runTurn(turn, input));
  return runTurn(turn, input);
}

/** {@link callAsync}'s run, once the session is the turn's: direct when no interceptor applies. */
function runTurn(
  turn: Turn,
  input: MessageInput | readonly MessageInput[] | undefined,
): Promise<AgentMessage> {
  let answer: unknown;
  try {
    const messages = turn.inputsOf(input);
    turn.link();
    if (turn.agentLinks.length > 0 || turn.framed) return driveAsync(linkedSteps(turn));
    turn.remember(messages);
    answer = turn.forward(messages);
  } catch (error) {
    return Promise.reject(failTurn(turn, error));
  }
  if (!isThenable(answer)) {
    // A model that answered at once: finishTurn has closed the turn either way.
    try {
      return Promise.resolve(finishTurn(turn, answer));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return Promise.resolve(answer).then(
    (value) => finishTurn(turn, value),
    (error: unknown) => {
      throw failTurn(turn, error);
    },
  );
}

/** The last steps of {@link callAsync}'s direct run: the reply from the model's answer, and the close. */
function finishTurn(turn: Turn, answer: unknown): AgentMessage {
  let reply: AgentMessage;
  try {
    reply = turn.reply(answer);
    turn.finished = true;
  } catch (error) {
    throw failTurn(turn, error);
  }
  turn.close();
  return reply;
}

/** A failed direct run: taken back; returns the error for the caller to throw. */
function failTurn(turn: Turn, error: unknown): unknown {
  turn.fail(error);
  turn.close();
  return error;
}
