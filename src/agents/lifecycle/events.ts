import { errorMessage } from '../../utils/text';
import type { AgentBase, AgentEvents } from '../agent-base';
import { EMITTER } from '../agent-symbols';
import { observers } from '../observers';

/* Agent events (to the agent's listeners and its owners', with `path`) and the built-in forwards' `chat` spans. */

/**
 * Emits an agent event to the agent's own listeners, then to every other agent with listeners for it that
 * holds this agent in its tree (wherever the call was made from), with `path` set to this agent's dotted
 * path there (`writer`, `experts.0`, ...).
 */
export function emitEvent<E extends keyof AgentEvents>(
  agent: AgentBase,
  event: E,
  payload: AgentEvents[E][0],
): void {
  if (agent[EMITTER]) emitSafely(agent, event, payload);
  if (observers.count === 0 || (observers.count === 1 && agent[EMITTER] !== undefined)) return;
  for (const ref of observers.agents) {
    const owner = ref.deref() as AgentBase | undefined;
    if (owner === undefined) {
      observers.agents.delete(ref);
      observers.count = observers.agents.size;
      continue;
    }
    if (owner === agent || owner[EMITTER]!.listenerCount(event) === 0) continue;
    const path = pathIn(owner, agent);
    if (path !== undefined) emitSafely(owner, event, { ...payload, path });
  }
}

/** The dotted path of `agent` in `owner`'s tree, or undefined when it is not a descendant. */
export function pathIn(owner: AgentBase, agent: AgentBase): string | undefined {
  // namedAgents() gives state-dict prefixes (`writer.`, `experts.0.`): the path is the prefix without its dot.
  for (const [prefix, node] of owner.namedAgents())
    if (node === agent && prefix !== '') return prefix.slice(0, -1);
  return undefined;
}

/** The error a streamed model call ends with when its stream's consumer left before the end. */
export const STREAM_LEFT = new Error('the stream was closed before it finished');

/** Emits an agent event; a listener that throws is reported as a process warning and never fails the call. */
export function emitSafely<E extends keyof AgentEvents>(
  agent: AgentBase,
  event: E,
  payload: AgentEvents[E][0],
): void {
  try {
    (agent[EMITTER]!.emit as (event: E, payload: AgentEvents[E][0]) => boolean)(event, payload);
  } catch (error) {
    process.emitWarning(`a listener of ${agent.name}'s "${event}" event threw: ${errorMessage(error)}`, {
      code: 'LAGENT_LISTENER_ERROR',
      detail:
        'Listener errors never fail the call that emitted the event; later listeners of the same event were skipped.',
    });
  }
}
