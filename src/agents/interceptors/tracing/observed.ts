import type { AgentBase } from '../../agent-base';
import { EMITTER } from '../../agent-symbols';
import { observers } from '../../observers';

/** True when events of `agent` reach someone: its own listeners, or observers of the whole process. */
export function observed(agent: AgentBase): boolean {
  return agent[EMITTER] !== undefined || observers.count > 0;
}
