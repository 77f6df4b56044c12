import type { MemoryManager } from '../memory/memory-manager';
import { AgentMessage, type AgentMessageJSON } from '../schema/agent-message';
import { StateDictError, ValidationError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { isPlainObject } from '../utils/is';
import type { MemoryNode } from './agent-tree';

/** A state dict: dotted paths (`memory`, `writer.memory`, `list.0.memory`) to saved messages. */
export type StateDict = Record<string, AgentMessageJSON[]>;

/** What the state-dict functions need of an agent: its tree of memories. */
export interface StateTree {
  namedAgents(): Iterable<[string, MemoryNode]>;
}

/** Every memory in the tree for one session, keyed by dotted path. */
export function saveStateDict(tree: StateTree, sessionId: SessionId): StateDict {
  const dict: StateDict = {};
  for (const [path, agent] of tree.namedAgents()) {
    if (agent.memory) dict[`${path}memory`] = agent.memory.get(sessionId)?.save() ?? [];
  }
  return dict;
}

/** Restores every memory in the tree for one session; everything is checked before anything changes. */
export function loadStateDict(tree: StateTree, dict: StateDict, sessionId: SessionId): void {
  if (!isPlainObject(dict)) {
    throw new StateDictError({
      key: '(root)',
      message: 'loadStateDict expects an object of dotted paths to message lists',
    });
  }
  const plan: [MemoryManager, AgentMessage[]][] = [];
  const expected = new Set<string>();
  for (const [path, agent] of tree.namedAgents()) {
    if (!agent.memory) continue;
    const key = `${path}memory`;
    expected.add(key);
    if (!(key in dict)) {
      throw new StateDictError({
        key,
        message: `loadStateDict: missing key "${key}" (the agent tree has it)`,
      });
    }
    const entries = dict[key];
    if (!Array.isArray(entries)) {
      throw new StateDictError({ key, message: `loadStateDict: "${key}" must be an array of messages` });
    }
    const messages = entries.map((entry, i) => {
      try {
        return AgentMessage.from(entry);
      } catch (error) {
        const field = error instanceof ValidationError ? error.field : '(root)';
        throw new StateDictError({
          key,
          message: `loadStateDict: "${key}"[${i}] is not a valid message (${field}): ${(error as Error).message}`,
          cause: error,
        });
      }
    });
    plan.push([agent.memory, messages]);
  }
  const unknown = Object.keys(dict).filter((key) => !expected.has(key));
  if (unknown.length > 0) {
    process.emitWarning(`loadStateDict ignored unknown keys: ${unknown.join(', ')}`, {
      code: 'LAGENT_UNKNOWN_STATE_KEYS',
    });
  }
  for (const [manager, messages] of plan) manager.getOrCreate(sessionId).load(messages);
}
