import type { MemoryManager } from '../memory/memory-manager';
import {
  AgentMessage,
  type AgentMessageJSON,
  type LagentMessageJSON,
  type MessageJSONFormat,
  toLagentJSON,
} from '../schema/agent-message';
import { StateDictError, ValidationError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { isPlainObject } from '../utils/is';
import { printable } from '../utils/printable';
import type { MemoryNode } from './agent-tree';
import { sessionRecordsOf } from './interceptors/working-memory/symbol';

/** A state dict: dotted paths (`memory`, `writer.memory`, `list.0.memory`) to saved messages. */
export type StateDict = Record<string, AgentMessageJSON[]>;

/** A state dict in Python Lagent's shape (`Agent.state_dict()`): the same keys, snake_case messages. */
export type LagentStateDict = Record<string, LagentMessageJSON[]>;

/** Options of `agent.stateDict()`. */
export interface StateDictOptions {
  /**
   * `'lagent'` writes every message in Python Lagent's shape, which its `load_state_dict` continues from.
   * @default 'lagent-ts'
   */
  format?: MessageJSONFormat | undefined;
}

/** What the state-dict functions need of an agent: its tree of memories. */
export interface StateTree {
  namedAgents(): Iterable<[string, MemoryNode]>;
}

/**
 * Every memory in the tree for one session, keyed by dotted path (in `'lagent'` format the path's
 * camelCase segments are written in snake_case, as Python names attributes). A message that has no JSON form (nested
 * deeper than `MAX_MESSAGE_DEPTH`, or circular) is a {@link StateDictError} naming its key.
 */
export function saveStateDict(
  tree: StateTree,
  sessionId: SessionId,
  options: StateDictOptions & { format: 'lagent' },
): LagentStateDict;
export function saveStateDict(
  tree: StateTree,
  sessionId: SessionId,
  options?: StateDictOptions & { format?: 'lagent-ts' },
): StateDict;
export function saveStateDict(
  tree: StateTree,
  sessionId: SessionId,
  options?: StateDictOptions,
): StateDict | LagentStateDict;
export function saveStateDict(
  tree: StateTree,
  sessionId: SessionId,
  options: StateDictOptions = {},
): StateDict | LagentStateDict {
  const lagent = options.format === 'lagent';
  const dict: Record<string, AgentMessageJSON[] | LagentMessageJSON[]> = {};
  for (const [path, name, manager] of memoriesIn(tree)) {
    const key = lagent ? snakePath(`${path}${name}`) : `${path}${name}`;
    let saved: AgentMessageJSON[];
    try {
      saved = manager.get(sessionId)?.save() ?? [];
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      throw new StateDictError({
        key,
        message: `stateDict: "${key}" has a message with no JSON form (${error.field}): ${error.message}`,
        cause: error,
      });
    }
    dict[key] = lagent ? saved.map((json) => toLagentJSON(json)) : saved;
  }
  return dict as StateDict | LagentStateDict;
}

/**
 * Restores every memory in the tree for one session; everything is checked before anything changes. Reads
 * both shapes: lagent-ts's camelCase one and Python Lagent's snake_case one (a `null` list, as Lagent
 * accepts, is an empty memory).
 */
export function loadStateDict(
  tree: StateTree,
  dict: StateDict | LagentStateDict,
  sessionId: SessionId,
): void {
  if (!isPlainObject(dict)) {
    throw new StateDictError({
      key: '(root)',
      message: 'loadStateDict expects an object of dotted paths to message lists',
    });
  }
  const plan: [MemoryManager, AgentMessage[]][] = [];
  const expected = new Set<string>();
  for (const [path, name, manager] of memoriesIn(tree)) {
    let key = `${path}${name}`;
    // Python Lagent names sub-agents in snake_case (`select_agent.memory` for `selectAgent.memory`).
    const snake = snakePath(key);
    if (!Object.hasOwn(dict, key) && snake !== key && Object.hasOwn(dict, snake)) key = snake;
    expected.add(key);
    // A working memory's records are optional: a state dict saved before the agent had one leaves it empty.
    if (!(key in dict) && name === 'workingMemory') {
      plan.push([manager, []]);
      continue;
    }
    if (!(key in dict)) {
      throw new StateDictError({
        key,
        message: `loadStateDict: missing key "${key}" (the agent tree has it)`,
      });
    }
    const entries = dict[key] ?? [];
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
    plan.push([manager, messages]);
  }
  const unknown = Object.keys(dict).filter((key) => !expected.has(key));
  if (unknown.length > 0) {
    // The keys may come from an uploaded file: escaped, and not all of a huge list.
    const shown = unknown.slice(0, 20).map((key) => `"${printable(key)}"`);
    if (unknown.length > shown.length) shown.push(`and ${unknown.length - shown.length} more`);
    process.emitWarning(`loadStateDict ignored unknown keys: ${shown.join(', ')}`, {
      code: 'LAGENT_UNKNOWN_STATE_KEYS',
    });
  }
  for (const [manager, messages] of plan) manager.getOrCreate(sessionId).load(messages);
}

/** Every memory of the tree: its agent's path, its key there (`memory`, `workingMemory`) and its manager. */
function* memoriesIn(tree: StateTree): Generator<[string, string, MemoryManager]> {
  for (const [path, agent] of tree.namedAgents()) {
    if (agent.memory) yield [path, 'memory', agent.memory];
    const records = sessionRecordsOf(agent);
    if (records !== undefined) yield [path, 'workingMemory', records];
  }
}

/** A dotted state-dict path in Python's naming: each camelCase segment in snake_case (`selectAgent` -> `select_agent`). */
export function snakePath(path: string): string {
  return path.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}
