import type { MemoryManager } from '../memory/memory-manager';
import { ConfigurationError } from '../schema/errors';

/** Marks agents and agent containers, so discovery needs no runtime import of either class. */
export const AGENT_NODE: unique symbol = Symbol.for('lagent-ts.agentNode');

/** Anything that can sit in an agent tree: an agent, an `AgentList` or an `AgentDict`. */
export interface AgentNode {
  readonly [AGENT_NODE]: 'agent' | 'container';
  children(): [string, AgentNode][];
  toString(): string;
}

/** An agent node that owns memory. */
export interface MemoryNode extends AgentNode {
  readonly [AGENT_NODE]: 'agent';
  memory: MemoryManager | null;
  readonly name: string;
}

/** True for agents and agent containers (anything that can sit in an agent tree). */
export function isAgentNode(value: unknown): value is AgentNode {
  return value !== null && typeof value === 'object' && AGENT_NODE in value;
}

/** Keys of sub-agents appear in dotted state-dict paths, so they may not contain '.'. */
export function checkChildKey(key: string): string {
  if (key.length === 0 || key.includes('.')) {
    throw new ConfigurationError({
      message: `Sub-agent key ${JSON.stringify(key)} must be non-empty and may not contain '.'`,
    });
  }
  return key;
}

/** Own enumerable properties holding agents or containers, in property order (like nn.Module). */
export function discoverChildren(owner: object): [string, AgentNode][] {
  const found: [string, AgentNode][] = [];
  for (const key of Object.keys(owner)) {
    const value = (owner as Record<string, unknown>)[key];
    if (isAgentNode(value)) found.push([key, value]);
  }
  return found;
}

/** PyTorch-style tree text: `Name(extra)(\n  (child): ...\n)`. */
export function renderTree(head: string, children: [string, AgentNode][]): string {
  if (children.length === 0) return head;
  const lines = children.map(([key, child]) => `  (${key}): ${child.toString().replace(/\n/g, '\n  ')}`);
  return `${head}(\n${lines.join('\n')}\n)`;
}

/** The value, checked to be an agent or container (for `AgentList` / `AgentDict` members). */
export function checkAgent<T>(value: T, where: string): T {
  if (!isAgentNode(value))
    throw new ConfigurationError({ message: `${where}: expected an agent, got ${typeof value}` });
  return value;
}
