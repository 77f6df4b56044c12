import { AGENT_NODE, type AgentNode, checkAgent, checkChildKey, renderTree } from './agent-tree';

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
