import type { MemoryManager } from '../../../memory/memory-manager';
import type { WorkingMemory } from './record';

/** Where agents keep their working memory (the agent it was given to, and a function-calling loop's model-facing agent). */
export const WORKING_MEMORY: unique symbol = Symbol('lagent-ts.workingMemory');

/** The working memory of an agent, if it has one. */
export function workingMemoryOf(agent: object): WorkingMemory | undefined {
  return (agent as { [WORKING_MEMORY]?: WorkingMemory })[WORKING_MEMORY];
}

/** The session records an agent keeps (`workingMemory` in its state dict), when it owns a session-scoped one. */
export function sessionRecordsOf(agent: object): MemoryManager | undefined {
  const working = workingMemoryOf(agent);
  return working !== undefined && working.owner === agent && working.scope === 'session'
    ? working.sessions
    : undefined;
}
