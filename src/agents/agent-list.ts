import { ConfigurationError } from '../schema/errors';
import { AGENT_NODE, type AgentNode, checkChildKey, isAgentNode, renderTree } from './node';

function checkAgent<T>(value: T, where: string): T {
  if (!isAgentNode(value))
    throw new ConfigurationError({ message: `${where}: expected an agent, got ${typeof value}` });
  return value;
}

/**
 * An ordered container of sub-agents (like `nn.ModuleList`). It has no memory and is not callable; its
 * agents appear in the owner's state dict as `name.0.memory`, `name.1.memory`, ...
 *
 * @example
 * class Panel extends Agent {
 *   experts = new AgentList([new Agent({ llm }), new Agent({ llm })]);
 * }
 */
export class AgentList<T extends AgentNode = AgentNode> implements AgentNode, Iterable<T> {
  readonly [AGENT_NODE] = 'container' as const;
  readonly #items: T[] = [];

  constructor(agents: Iterable<T> = []) {
    for (const agent of agents) this.push(agent);
  }

  get length(): number {
    return this.#items.length;
  }

  /** The agent at `index` (negative counts from the end). */
  get(index: number): T | undefined {
    return this.#items.at(index);
  }

  push(...agents: T[]): number {
    for (const agent of agents) this.#items.push(checkAgent(agent, 'AgentList.push'));
    return this.#items.length;
  }

  [Symbol.iterator](): Iterator<T> {
    return this.#items[Symbol.iterator]();
  }

  children(): [string, AgentNode][] {
    return this.#items.map((agent, i) => [String(i), agent]);
  }

  toString(): string {
    return renderTree('AgentList', this.children());
  }
}

/**
 * A keyed container of sub-agents (like `nn.ModuleDict`). It has no memory and is not callable; its
 * agents appear in the owner's state dict as `name.key.memory`. Keys may not contain '.'.
 */
export class AgentDict<T extends AgentNode = AgentNode> implements AgentNode, Iterable<[string, T]> {
  readonly [AGENT_NODE] = 'container' as const;
  readonly #items = new Map<string, T>();

  constructor(agents: Record<string, T> | Iterable<[string, T]> = {}) {
    const entries = Symbol.iterator in agents ? agents : Object.entries(agents);
    for (const [key, agent] of entries as Iterable<[string, T]>) this.set(key, agent);
  }

  get size(): number {
    return this.#items.size;
  }

  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  has(key: string): boolean {
    return this.#items.has(key);
  }

  set(key: string, agent: T): this {
    this.#items.set(checkChildKey(key), checkAgent(agent, `AgentDict.set(${JSON.stringify(key)})`));
    return this;
  }

  delete(key: string): boolean {
    return this.#items.delete(key);
  }

  keys(): IterableIterator<string> {
    return this.#items.keys();
  }

  [Symbol.iterator](): Iterator<[string, T]> {
    return this.#items.entries();
  }

  children(): [string, AgentNode][] {
    return [...this.#items];
  }

  toString(): string {
    return renderTree('AgentDict', this.children());
  }
}
